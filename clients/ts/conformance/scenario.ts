import { readFile } from "node:fs/promises";
import { parse } from "yaml";

/** A value decoded from the scenario's YAML. */
export type Value = string | number | boolean | null | Value[] | { [key: string]: Value };
export type ValueMap = { [key: string]: Value };

/** What RunWorker's handler for one queue does with every task it gets. */
export type HandlerSpec =
  /** Completes the task with this map; its strings may use ${input.KEY}. */
  | { result: ValueMap }
  /** Throws the worker's TaskFailure with these fields. */
  | { fail: { type: string; message: string; nonRetryable: boolean } };

export interface Step {
  id: string;
  op: string;
  request?: ValueMap;
  expect?: ValueMap;
  save?: string;
  repeat?: number;
  watch?: string;
  /** RunWorker: one handler per queue. */
  handlers?: Map<string, HandlerSpec>;
  /** RunWorker: the instance whose terminal status ends the step. */
  until?: { name: string };
  /** RunWorker: how long the instance may take to end. */
  timeoutMs?: number;
}

export interface Scenario {
  version: number;
  steps: Step[];
}

const stepKeys = new Set(["id", "op", "request", "expect", "save", "repeat", "watch", "handlers", "until", "timeout"]);
const workerKeys = ["handlers", "until", "timeout"];

function isMap(v: unknown): v is ValueMap {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Parses scenario YAML strictly: an unknown key, a missing id or op, a duplicate id or an
 * unsupported version is an error, so that a scenario this runner does not understand
 * fails instead of passing vacuously.
 */
export function parseScenario(text: string): Scenario {
  const doc: unknown = parse(text);
  if (!isMap(doc)) {
    throw new Error("scenario: expected a map at the top level");
  }
  for (const key of Object.keys(doc)) {
    if (key !== "version" && key !== "steps") {
      throw new Error(`scenario: unknown top-level key ${JSON.stringify(key)}`);
    }
  }
  if (doc["version"] !== 1) {
    throw new Error(`scenario: unsupported version ${String(doc["version"])} (this runner knows version 1)`);
  }
  const rawSteps = doc["steps"];
  if (!Array.isArray(rawSteps) || rawSteps.length === 0) {
    throw new Error("scenario: no steps");
  }
  const seen = new Set<string>();
  const steps = rawSteps.map((raw, index): Step => {
    const where = `scenario: step ${index + 1}`;
    if (!isMap(raw)) {
      throw new Error(`${where}: expected a map`);
    }
    for (const key of Object.keys(raw)) {
      if (!stepKeys.has(key)) {
        throw new Error(`${where}: unknown key ${JSON.stringify(key)}`);
      }
    }
    const { id, op, request, expect, save, repeat, watch, handlers, until, timeout } = raw;
    if (typeof id !== "string" || id === "" || typeof op !== "string" || op === "") {
      throw new Error(`${where}: id and op are required strings`);
    }
    if (seen.has(id)) {
      throw new Error(`${where}: duplicate id ${JSON.stringify(id)}`);
    }
    seen.add(id);
    const step: Step = { id, op };
    if (request !== undefined && request !== null) {
      if (!isMap(request)) throw new Error(`${where}: request must be a map`);
      step.request = request;
    }
    if (expect !== undefined && expect !== null) {
      if (!isMap(expect)) throw new Error(`${where}: expect must be a map`);
      step.expect = expect;
    }
    if (save !== undefined) {
      if (typeof save !== "string") throw new Error(`${where}: save must be a string`);
      step.save = save;
    }
    if (watch !== undefined) {
      if (typeof watch !== "string") throw new Error(`${where}: watch must be a string`);
      step.watch = watch;
    }
    if (repeat !== undefined) {
      if (typeof repeat !== "number" || !Number.isInteger(repeat) || repeat < 1) {
        throw new Error(`${where}: repeat must be a positive integer`);
      }
      if (repeat > 1 && step.save !== undefined) {
        throw new Error(`${where}: repeat cannot be combined with save`);
      }
      step.repeat = repeat;
    }
    if (op === "RunWorker") {
      step.handlers = parseHandlers(handlers, where);
      if (!isMap(until) || typeof until["name"] !== "string" || Object.keys(until).length !== 1) {
        throw new Error(`${where}: until must be a map with just a name string`);
      }
      step.until = { name: until["name"] };
      step.timeoutMs = parseTimeout(timeout, where);
    } else {
      const misplaced = workerKeys.filter((key) => Object.hasOwn(raw, key));
      if (misplaced.length > 0) {
        throw new Error(`${where}: ${misplaced.join(", ")} only belong to RunWorker steps`);
      }
    }
    return step;
  });
  return { version: 1, steps };
}

function parseHandlers(raw: Value | undefined, where: string): Map<string, HandlerSpec> {
  if (!isMap(raw) || Object.keys(raw).length === 0) {
    throw new Error(`${where}: handlers must be a map of at least one queue`);
  }
  const handlers = new Map<string, HandlerSpec>();
  for (const [queue, spec] of Object.entries(raw)) {
    const at = `${where}: handlers.${queue}`;
    if (!isMap(spec) || Object.keys(spec).length !== 1) {
      throw new Error(`${at}: expected a map with exactly one of result or fail`);
    }
    const { result, fail } = spec;
    if (result !== undefined) {
      if (!isMap(result)) throw new Error(`${at}: result must be a map`);
      handlers.set(queue, { result });
    } else if (fail !== undefined) {
      if (!isMap(fail)) throw new Error(`${at}: fail must be a map`);
      for (const key of Object.keys(fail)) {
        if (key !== "type" && key !== "message" && key !== "non_retryable") {
          throw new Error(`${at}.fail: unknown key ${JSON.stringify(key)}`);
        }
      }
      const { type, message = "", non_retryable: nonRetryable = false } = fail;
      if (typeof type !== "string" || type === "") throw new Error(`${at}.fail: type is a required string`);
      if (typeof message !== "string") throw new Error(`${at}.fail: message must be a string`);
      if (typeof nonRetryable !== "boolean") throw new Error(`${at}.fail: non_retryable must be a boolean`);
      handlers.set(queue, { fail: { type, message, nonRetryable } });
    } else {
      throw new Error(`${at}: unknown key ${JSON.stringify(Object.keys(spec)[0])}`);
    }
  }
  return handlers;
}

const timeoutPattern = /^(\d+(?:\.\d+)?)(ms|s|m)$/;
const unitMs: Record<string, number> = { ms: 1, s: 1_000, m: 60_000 };

/** A duration such as 500ms, 60s or 2m, in milliseconds. */
function parseTimeout(raw: Value | undefined, where: string): number {
  const m = typeof raw === "string" ? timeoutPattern.exec(raw) : null;
  const ms = m ? Number(m[1]) * (unitMs[m[2] ?? ""] ?? NaN) : NaN;
  if (!(ms > 0)) {
    throw new Error(`${where}: timeout must be a positive duration such as 500ms, 60s or 2m, not ${JSON.stringify(raw)}`);
  }
  return ms;
}

export async function loadScenario(path: string): Promise<Scenario> {
  try {
    return parseScenario(await readFile(path, "utf8"));
  } catch (err) {
    throw new Error(`${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

const refPattern = /\$\{([^}]*)\}/g;
const wholeRef = /^\$\{([^}]*)\}$/;
const noneDeferred: ReadonlySet<string> = new Set();

/** What a lookup answers for a reference to leave as it is, for a later pass. */
const KEEP = Symbol("keep");

/**
 * A copy of v with every ${...} replaced by lookup. A string that is exactly one reference
 * takes the referenced value with its type; references inside longer strings are
 * formatted in.
 */
function substitute(v: Value, lookup: (ref: string) => Value | typeof KEEP): Value {
  if (typeof v === "string") {
    const whole = wholeRef.exec(v);
    if (whole) {
      const found = lookup(whole[1] ?? "");
      return found === KEEP ? v : found;
    }
    return v.replace(refPattern, (text, ref: string) => {
      const found = lookup(ref);
      return found === KEEP ? text : format(found);
    });
  }
  if (Array.isArray(v)) {
    return v.map((item) => substitute(item, lookup));
  }
  if (isMap(v)) {
    return Object.fromEntries(Object.entries(v).map(([k, item]) => [k, substitute(item, lookup)]));
  }
  return v;
}

/** The name a reference starts with: `input` for ${input.order}. */
function refRoot(ref: string): string {
  const dot = ref.indexOf(".");
  return dot < 0 ? ref : ref.slice(0, dot);
}

/**
 * Resolves ${...} references: plain variables (run, i) and values saved by earlier steps
 * (${name.path}), where path walks the saved response as protobuf JSON with proto field
 * names. A path that does not start at the response's top level is also tried under its
 * `workflow` field, so ${mail.revision} means ${mail.workflow.revision}.
 */
export class Scope {
  readonly vars = new Map<string, Value>();
  readonly saved = new Map<string, Value>();

  lookup(ref: string): Value {
    const direct = this.vars.get(ref);
    if (direct !== undefined) {
      return direct;
    }
    const dot = ref.indexOf(".");
    if (dot < 0) {
      throw new Error(`unknown variable \${${ref}}`);
    }
    const name = ref.slice(0, dot);
    const path = ref.slice(dot + 1).split(".");
    const root = this.saved.get(name);
    if (root === undefined) {
      throw new Error(`\${${ref}}: no earlier step saved ${JSON.stringify(name)}`);
    }
    const found = walk(root, path) ?? (isMap(root) ? walk(root["workflow"], path) : undefined);
    if (found === undefined) {
      throw new Error(`\${${ref}}: ${JSON.stringify(name)} has no field ${path.join(".")}`);
    }
    return found;
  }

  /**
   * A copy of v with every ${...} replaced, except references that start with a name in
   * deferred (`input`, in a handler's result), which a later pass resolves.
   */
  expand(v: Value, deferred: ReadonlySet<string> = noneDeferred): Value {
    return substitute(v, (ref) => (deferred.has(refRoot(ref)) ? KEEP : this.lookup(ref)));
  }
}

/**
 * Resolves the ${input.KEY} references that Scope.expand left in a handler's result, from
 * the task's input (KEY may be a dotted path into it). Any other reference is an error.
 */
export function expandInput(v: Value, input: Value): Value {
  return substitute(v, (ref) => {
    if (refRoot(ref) !== "input") {
      throw new Error(`\${${ref}}: only \${input.KEY} is resolved from the task`);
    }
    if (ref === "input") {
      return input;
    }
    const path = ref.slice("input.".length).split(".");
    const found = walk(input, path);
    if (found === undefined) {
      const keys = isMap(input) ? Object.keys(input).sort().join(", ") : "";
      throw new Error(`\${${ref}}: the task input has no field ${path.join(".")} (it has: ${keys || "nothing"})`);
    }
    return found;
  });
}

function walk(v: Value | undefined, keys: string[]): Value | undefined {
  for (const key of keys) {
    if (Array.isArray(v)) {
      v = /^\d+$/.test(key) ? v[Number(key)] : undefined;
    } else if (isMap(v)) {
      v = Object.hasOwn(v, key) ? v[key] : undefined;
    } else {
      return undefined;
    }
  }
  return v;
}

function format(v: Value): string {
  return typeof v === "string" ? v : JSON.stringify(v);
}
