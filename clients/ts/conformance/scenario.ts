import { readFile } from "node:fs/promises";
import { parse } from "yaml";

/** A value decoded from the scenario's YAML. */
export type Value = string | number | boolean | null | Value[] | { [key: string]: Value };
export type ValueMap = { [key: string]: Value };

export interface Step {
  id: string;
  op: string;
  request?: ValueMap;
  expect?: ValueMap;
  save?: string;
  repeat?: number;
  watch?: string;
}

export interface Scenario {
  version: number;
  steps: Step[];
}

const stepKeys = new Set(["id", "op", "request", "expect", "save", "repeat", "watch"]);

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
    const { id, op, request, expect, save, repeat, watch } = raw;
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
    return step;
  });
  return { version: 1, steps };
}

export async function loadScenario(path: string): Promise<Scenario> {
  try {
    return parseScenario(await readFile(path, "utf8"));
  } catch (err) {
    throw new Error(`${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

const refPattern = /\$\{([^}]*)\}/g;

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
   * A copy of v with every ${...} replaced. A string that is exactly one reference takes
   * the referenced value with its type; references inside longer strings are formatted in.
   */
  expand(v: Value): Value {
    if (typeof v === "string") {
      const whole = /^\$\{([^}]*)\}$/.exec(v);
      if (whole) {
        return this.lookup(whole[1] ?? "");
      }
      return v.replace(refPattern, (_, ref: string) => format(this.lookup(ref)));
    }
    if (Array.isArray(v)) {
      return v.map((item) => this.expand(item));
    }
    if (isMap(v)) {
      return Object.fromEntries(Object.entries(v).map(([k, item]) => [k, this.expand(item)]));
    }
    return v;
  }
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
