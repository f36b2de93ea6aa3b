import { setTimeout as sleep } from "node:timers/promises";

import { fromJson, toJson, type DescMessage, type JsonObject, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";

import { ErrorInfoSchema } from "../src/error_info.js";
import { codeName } from "../src/service_config.js";
import type { StatewrightClient, WorkflowServiceClient } from "../src/client.js";
import { TaskFailure, Worker, type TaskHandler } from "../src/worker.js";
import { TaskStatus, type Task } from "../src/gen/statewright/v1/task_pb.js";
import {
  CancelWorkflowRequestSchema,
  CancelWorkflowResponseSchema,
  GetDiagnosticsRequestSchema,
  GetDiagnosticsResponseSchema,
  GetWorkflowRequestSchema,
  GetWorkflowResponseSchema,
  ListWorkflowsRequestSchema,
  ResumeWorkflowRequestSchema,
  ResumeWorkflowResponseSchema,
  SignalRejection,
  SignalWorkflowRequestSchema,
  SignalWorkflowResponseSchema,
  StartWorkflowRequestSchema,
  StartWorkflowResponseSchema,
  WatchEventType,
  WatchWorkflowRequestSchema,
  type GetDiagnosticsResponse,
  type SignalWorkflowResponse,
  type WatchWorkflowResponse,
} from "../src/gen/statewright/v1/workflow_service_pb.js";
import { WorkflowStatus, type Workflow } from "../src/gen/statewright/v1/workflow_pb.js";
import { Expectation } from "./expect.js";
import { Scope, expandInput, type HandlerSpec, type Scenario, type Step, type Value, type ValueMap } from "./scenario.js";

/** Bounds ListWorkflows and ListTasks paging, so that never-ending page tokens fail the step. */
const maxPages = 10000;

/** How often RunWorker looks whether its instance has ended. */
const untilPollMs = 100;

/** What a handler's result may leave for the task's input to fill in. */
const deferredInput: ReadonlySet<string> = new Set(["input"]);

export interface RunnerOptions {
  client: StatewrightClient;
  runId: string;
  /** Where step lines go; console.log by default. */
  log?: (line: string) => void;
  /** How long a watch step waits for the first message, and AwaitWatch for the end. */
  watchTimeoutMs?: number;
}

export interface Result {
  passed: number;
  failed: number;
  skipped: number;
  /** The first failure, as "step id (op): what"; undefined when every step passed. */
  failure?: string;
}

interface Outcome {
  summary: string;
  saved?: JsonValue;
}

type UnaryOp = (runner: Runner, step: Step, e: Expectation) => Promise<Outcome>;

function unaryOp<I extends DescMessage, O extends DescMessage>(
  input: I,
  output: O,
  call: (client: WorkflowServiceClient, request: MessageShape<I>, signal: AbortSignal) => Promise<MessageShape<O>>,
  check: (e: Expectation, response: MessageShape<O>) => string,
): UnaryOp {
  return async (runner, step, e) => {
    const request = runner.buildRequest(step, input);
    let response: MessageShape<O>;
    try {
      response = await call(runner.client, request, runner.signal);
    } catch (err) {
      const wantErr = e.sub("error");
      if (!wantErr) {
        throw new Error(describeError(err));
      }
      const summary = checkError(wantErr, err);
      e.merge("error", wantErr);
      return { summary };
    }
    if (e.sub("error")) {
      throw new Error("expected the call to fail, but it succeeded");
    }
    return {
      summary: check(e, response),
      saved: toJson(output, response, { useProtoFieldName: true, alwaysEmitImplicit: true }),
    };
  };
}

const unaryOps: Record<string, UnaryOp> = {
  StartWorkflow: unaryOp(StartWorkflowRequestSchema, StartWorkflowResponseSchema,
    (c, r, signal) => c.startWorkflow(r, { signal }), (e, r) => checkWorkflow(e, r.workflow)),
  ResumeWorkflow: unaryOp(ResumeWorkflowRequestSchema, ResumeWorkflowResponseSchema,
    (c, r, signal) => c.resumeWorkflow(r, { signal }), (e, r) => checkWorkflow(e, r.workflow)),
  SignalWorkflow: unaryOp(SignalWorkflowRequestSchema, SignalWorkflowResponseSchema,
    (c, r, signal) => c.signalWorkflow(r, { signal }), checkSignal),
  GetWorkflow: unaryOp(GetWorkflowRequestSchema, GetWorkflowResponseSchema,
    (c, r, signal) => c.getWorkflow(r, { signal }), (e, r) => checkWorkflow(e, r.workflow)),
  CancelWorkflow: unaryOp(CancelWorkflowRequestSchema, CancelWorkflowResponseSchema,
    (c, r, signal) => c.cancelWorkflow(r, { signal }), (e, r) => checkWorkflow(e, r.workflow)),
  GetDiagnostics: unaryOp(GetDiagnosticsRequestSchema, GetDiagnosticsResponseSchema,
    (c, r, signal) => c.getDiagnostics(r, { signal }), checkDiagnostics),
};

/** A WatchWorkflow stream read in the background. */
class WatchStream {
  readonly messages: WatchWorkflowResponse[] = [];
  /** The stream's final error; undefined while open or when it ended OK. */
  error: ConnectError | undefined;
  ended = false;
  readonly first: Promise<void>;
  readonly done: Promise<void>;

  constructor(stream: AsyncIterable<WatchWorkflowResponse>) {
    let firstArrived!: () => void;
    this.first = new Promise((resolve) => (firstArrived = resolve));
    this.done = (async () => {
      try {
        for await (const message of stream) {
          this.messages.push(message);
          firstArrived();
        }
      } catch (err) {
        this.error = ConnectError.from(err);
      } finally {
        this.ended = true;
        firstArrived();
      }
    })();
  }
}

/** Executes a scenario's steps in order against a live server, stopping at the first failure. */
export class Runner {
  readonly client: StatewrightClient;
  private readonly abort = new AbortController();
  private readonly log: (line: string) => void;
  private readonly watchTimeoutMs: number;
  private readonly scope = new Scope();
  private readonly watches = new Map<string, WatchStream>();

  constructor(options: RunnerOptions) {
    this.client = options.client;
    this.log = options.log ?? ((line) => console.log(line));
    this.watchTimeoutMs = options.watchTimeoutMs ?? 30_000;
    this.scope.vars.set("run", options.runId);
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  async run(scenario: Scenario): Promise<Result> {
    const result: Result = { passed: 0, failed: 0, skipped: 0 };
    try {
      for (const step of scenario.steps) {
        if (result.failure !== undefined) {
          result.skipped++;
          this.log(`SKIP ${step.id}`);
          continue;
        }
        try {
          const summary = await this.runStep(step);
          result.passed++;
          this.log(`PASS ${step.id} (${step.op}): ${summary}`);
        } catch (err) {
          const message = err instanceof Error ? err.message : String(err);
          result.failed++;
          result.failure = `step ${step.id} (${step.op}): ${message}`;
          this.log(`FAIL ${step.id} (${step.op}): ${message}`);
        }
      }
    } finally {
      this.abort.abort(); // ends watch streams still open
      await Promise.all([...this.watches.values()].map((w) => w.done));
    }
    const skipped = result.skipped > 0 ? `, ${result.skipped} skipped` : "";
    this.log(`conformance: ${result.passed} passed, ${result.failed} failed${skipped}`);
    return result;
  }

  private async runStep(step: Step): Promise<string> {
    const repeat = step.repeat ?? 1;
    const summaries: string[] = [];
    for (let i = 0; i < repeat; i++) {
      if (step.repeat !== undefined) {
        this.scope.vars.set("i", i);
      }
      try {
        summaries.push(await this.runOnce(step));
      } catch (err) {
        if (step.repeat !== undefined && err instanceof Error) {
          err.message = `repeat ${i}: ${err.message}`;
        }
        throw err;
      } finally {
        this.scope.vars.delete("i");
      }
    }
    return summaries.join(" | ");
  }

  private async runOnce(step: Step): Promise<string> {
    const e = new Expectation(this.scope.expand(step.expect ?? {}) as ValueMap);
    let outcome: Outcome;
    const unary = unaryOps[step.op];
    if (unary) {
      outcome = await unary(this, step, e);
    } else if (step.op === "ListWorkflows") {
      outcome = await this.listWorkflows(step, e);
    } else if (step.op === "WatchWorkflow") {
      outcome = await this.openWatch(step, e);
    } else if (step.op === "AwaitWatch") {
      outcome = await this.awaitWatch(step, e);
    } else if (step.op === "RunWorker") {
      outcome = await this.runWorker(step, e);
    } else {
      throw new Error(`unsupported op ${JSON.stringify(step.op)}`);
    }
    const problems = e.error();
    if (problems) {
      throw new Error(problems);
    }
    if (step.save !== undefined) {
      if (outcome.saved === undefined) {
        throw new Error(`save is not supported for op ${step.op}`);
      }
      this.scope.saved.set(step.save, outcome.saved as Value);
    }
    return outcome.summary;
  }

  /** The step's request, expanded and decoded through protobuf JSON: unknown fields fail. */
  buildRequest<I extends DescMessage>(step: Step, schema: I): MessageShape<I> {
    const json = this.scope.expand(step.request ?? {});
    try {
      return fromJson(schema, json);
    } catch (err) {
      throw new Error(`request does not fit ${schema.typeName}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private async listWorkflows(step: Step, e: Expectation): Promise<Outcome> {
    const request = this.buildRequest(step, ListWorkflowsRequestSchema);
    const pageSizes: number[] = [];
    const ids: string[] = [];
    const seen = new Set<string>();
    const duplicates: string[] = [];
    for (;;) {
      if (pageSizes.length === maxPages) {
        throw new Error(`still paging after ${maxPages} pages`);
      }
      let response;
      try {
        response = await this.client.listWorkflows(request, { signal: this.signal });
      } catch (err) {
        throw new Error(`page ${pageSizes.length + 1}: ${describeError(err)}`);
      }
      pageSizes.push(response.workflows.length);
      for (const wf of response.workflows) {
        if (seen.has(wf.workflowId) && !duplicates.includes(wf.workflowId)) {
          duplicates.push(wf.workflowId);
        }
        seen.add(wf.workflowId);
        ids.push(wf.workflowId);
      }
      if (response.nextPageToken === "") {
        break;
      }
      request.pageToken = response.nextPageToken;
    }
    const minPages = e.take("min_pages");
    if (minPages !== undefined && !(typeof minPages === "number" && pageSizes.length >= minPages)) {
      e.fail(`min_pages: expected at least ${JSON.stringify(minPages)} pages, got ${pageSizes.length}`);
    }
    const atMost = e.take("page_size_at_most");
    if (atMost !== undefined) {
      pageSizes.forEach((size, i) => {
        if (!(typeof atMost === "number" && size <= atMost)) {
          e.fail(`page_size_at_most: page ${i + 1} has ${size} workflows, expected at most ${JSON.stringify(atMost)}`);
        }
      });
    }
    const noDuplicates = e.take("no_duplicates");
    if (noDuplicates !== undefined && typeof noDuplicates !== "boolean") {
      e.fail(`no_duplicates: expected a boolean in the scenario, found ${JSON.stringify(noDuplicates)}`);
    } else if (noDuplicates === true && duplicates.length > 0) {
      e.fail(`no_duplicates: listed more than once: ${JSON.stringify(duplicates)}`);
    }
    e.checkContains("contains", ids);
    return { summary: `${ids.length} workflows over ${pageSizes.length} pages` };
  }

  private async openWatch(step: Step, e: Expectation): Promise<Outcome> {
    const request = this.buildRequest(step, WatchWorkflowRequestSchema);
    const watch = new WatchStream(this.client.watchWorkflow(request, { signal: this.signal }));
    this.watches.set(step.id, watch);
    if (!(await within(watch.first, this.watchTimeoutMs))) {
      throw new Error(`no message on the stream within ${this.watchTimeoutMs} ms`);
    }
    const first = watch.messages[0];
    if (!first) {
      throw new Error(
        watch.error
          ? `stream ended before its first message: ${describeError(watch.error)}`
          : "stream ended OK without any message",
      );
    }
    const firstExp = e.sub("first");
    if (firstExp) {
      checkWatchMessage(firstExp, first);
      e.merge("first", firstExp);
    }
    return { summary: `stream open; first ${describeWatchMessage(first)}` };
  }

  private async awaitWatch(step: Step, e: Expectation): Promise<Outcome> {
    const watch = step.watch === undefined ? undefined : this.watches.get(step.watch);
    if (!watch) {
      throw new Error(`no WatchWorkflow step ${JSON.stringify(step.watch)} ran before`);
    }
    if (!(await within(watch.done, this.watchTimeoutMs))) {
      throw new Error(`stream did not end within ${this.watchTimeoutMs} ms (${watch.messages.length} messages so far)`);
    }
    const msgs = watch.messages;
    // Contract: every revision in order, each message's workflow at its revision.
    msgs.forEach((m, i) => {
      if (m.workflow?.revision !== m.revision) {
        e.fail(`message ${i + 1}: revision ${m.revision} but its workflow is at revision ${m.workflow?.revision}`);
      }
      const previous = msgs[i - 1];
      if (previous && m.revision !== previous.revision + 1n) {
        e.fail(`message ${i + 1}: revision ${m.revision} follows revision ${previous.revision}`);
      }
    });
    const last = msgs[msgs.length - 1];
    if (!last) {
      throw new Error("the stream had no messages");
    }
    const lastExp = e.sub("last");
    if (lastExp) {
      checkWatchMessage(lastExp, last);
      e.merge("last", lastExp);
    }
    const ended = watch.error ? codeName(watch.error.code) : "OK";
    const wantEnd = e.take("ends");
    if (wantEnd !== undefined && wantEnd !== ended) {
      e.fail(`ends: expected ${JSON.stringify(wantEnd)}, got ${ended}${watch.error ? ` (${watch.error.message})` : ""}`);
    }
    return { summary: `${msgs.length} messages, last ${describeWatchMessage(last)}, ended ${ended}` };
  }

  /**
   * Runs the client's own Worker with the step's handlers until the instance `until.name`
   * ends (or the timeout passes), shuts it down gracefully, then checks the final instance,
   * its context (as a subset) and its tasks as ListTasks gives them.
   */
  private async runWorker(step: Step, e: Expectation): Promise<Outcome> {
    const { handlers, until, timeoutMs } = step;
    if (!handlers || !until || timeoutMs === undefined) {
      throw new Error("RunWorker needs handlers, until and timeout");
    }
    const name = this.scope.expand(until.name);
    if (typeof name !== "string") {
      throw new Error(`until.name: expected a string, got ${JSON.stringify(name)}`);
    }
    const worked = new Map<string, number>();
    // Problems of the runner's own handlers and what the worker logged as errors: each one
    // fails the step, and a handler's problem also ends the wait at once.
    const problems: string[] = [];
    const gaveUp = new AbortController();
    const worker = new Worker(this.client, {
      logger: {
        warn: (message) => this.log(`  worker: ${message}`),
        error: (message) => problems.push(`the worker logged an error: ${message}`),
      },
    });
    for (const [queue, spec] of handlers) {
      worker.register(queue, this.handler(queue, spec, worked, (problem) => {
        problems.push(problem);
        gaveUp.abort();
      }));
    }

    const stop = new AbortController();
    let stopped: { error: unknown } | undefined;
    const running = worker.run({ signal: stop.signal }).then(
      () => void (stopped = { error: undefined }),
      (error: unknown) => void (stopped = { error }),
    );
    let wf: Workflow | undefined;
    let timedOut = false;
    let stoppedEarly = false;
    try {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        let response;
        try {
          response = await this.client.getWorkflow({ name }, { signal: this.signal });
        } catch (err) {
          throw new Error(`GetWorkflow ${name}: ${describeError(err)}`);
        }
        wf = response.workflow;
        if (terminal(wf?.status) || gaveUp.signal.aborted) {
          break;
        }
        if (stopped !== undefined) {
          stoppedEarly = true;
          break;
        }
        const left = deadline - Date.now();
        if (left <= 0) {
          timedOut = true;
          break;
        }
        await sleep(Math.min(untilPollMs, left));
      }
    } finally {
      stop.abort();
      await running;
    }
    const tally = describeWorked(worked);
    const where = `${wf?.workflowId} ${WorkflowStatus[wf?.status ?? 0]} in ${wf?.state} at revision ${wf?.revision}`;
    const runError = stopped?.error;
    if (stoppedEarly) {
      problems.push(`the worker stopped by itself: ${runError === undefined ? "without an error" : describeError(runError)}`);
    } else if (runError !== undefined) {
      problems.push(`the worker's run failed: ${describeError(runError)}`);
    }
    if (timedOut) {
      problems.unshift(`${name} did not end within ${timeoutMs} ms: still ${where}`);
    } else if (!terminal(wf?.status)) {
      problems.unshift(`${name} had not ended when the worker stopped: ${where}`);
    }
    if (problems.length > 0) {
      throw new Error(`${problems.join("; ")} (worked ${tally})`);
    }

    checkWorkflow(e, wf);
    const tasks = await this.listTasks(name);
    const wantTasks = e.take("tasks");
    if (wantTasks !== undefined) {
      checkTasks(e, wantTasks, tasks);
    }
    return { summary: `worked ${tally}; ${where}; ${tasks.length} tasks: ${tasks.map(describeTask).join(", ")}` };
  }

  /** The runner's handler for queue: completes with the spec's result, or fails as it says. */
  private handler(queue: string, spec: HandlerSpec, worked: Map<string, number>, giveUp: (problem: string) => void): TaskHandler {
    const count = () => worked.set(queue, (worked.get(queue) ?? 0) + 1);
    if ("fail" in spec) {
      const type = this.scope.expand(spec.fail.type);
      const message = this.scope.expand(spec.fail.message);
      return () => {
        count();
        throw new TaskFailure(String(type), String(message), { nonRetryable: spec.fail.nonRetryable });
      };
    }
    const result = this.scope.expand(spec.result, deferredInput);
    return (task) => {
      count();
      try {
        return expandInput(result, task.input) as JsonObject;
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        giveUp(`handlers.${queue}: ${task.name}: ${message}`);
        // Never a result the scenario did not ask for: the attempt fails for good.
        throw new TaskFailure("CONFORMANCE_RUNNER", message, { nonRetryable: true });
      }
    };
  }

  /** Every task of the instance, all pages, in the order ListTasks gives them (oldest first). */
  private async listTasks(workflow: string): Promise<Task[]> {
    const tasks: Task[] = [];
    let pageToken = "";
    for (let page = 1; ; page++) {
      if (page > maxPages) {
        throw new Error(`ListTasks: still paging after ${maxPages} pages`);
      }
      let response;
      try {
        response = await this.client.listTasks({ workflow, pageToken }, { signal: this.signal });
      } catch (err) {
        throw new Error(`ListTasks page ${page}: ${describeError(err)}`);
      }
      tasks.push(...response.tasks);
      if (response.nextPageToken === "") {
        return tasks;
      }
      pageToken = response.nextPageToken;
    }
  }
}

/** Resolves true when p settles within ms, false otherwise. */
async function within(p: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([p.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function describeError(err: unknown): string {
  const ce = ConnectError.from(err);
  let text = `call failed: ${codeName(ce.code)}: ${ce.rawMessage}`;
  for (const info of ce.findDetails(ErrorInfoSchema)) {
    text += ` (reason ${info.reason}, metadata ${JSON.stringify(info.metadata)})`;
  }
  return text;
}

/** Checks the code and the single ErrorInfo of a failed call. */
function checkError(e: Expectation, err: unknown): string {
  const ce = ConnectError.from(err);
  e.checkString("code", codeName(ce.code));
  const infos = ce.findDetails(ErrorInfoSchema);
  if (infos.length !== 1) {
    e.fail(
      `expected exactly one google.rpc.ErrorInfo in the status details, found ${infos.length} ` +
        `(status ${codeName(ce.code)}: ${ce.rawMessage})`,
    );
  }
  const reason = infos[0]?.reason ?? "";
  const metadata = infos[0]?.metadata ?? {};
  e.checkString("reason", reason);
  e.checkString("domain", infos[0]?.domain ?? "");
  const want = e.take("metadata");
  if (want !== undefined) {
    if (typeof want !== "object" || want === null || Array.isArray(want)) {
      e.fail(`metadata: expected a map in the scenario, found ${JSON.stringify(want)}`);
    } else {
      for (const [key, value] of Object.entries(want)) {
        const expected = typeof value === "string" ? value : JSON.stringify(value);
        if (metadata[key] !== expected) {
          e.fail(`metadata[${key}]: expected ${JSON.stringify(expected)}, got ${JSON.stringify(metadata[key])}`);
        }
      }
    }
  }
  return `failed as expected with ${codeName(ce.code)}, reason ${reason}, metadata ${JSON.stringify(metadata)}`;
}

function terminal(status: WorkflowStatus | undefined): boolean {
  return status === WorkflowStatus.COMPLETED || status === WorkflowStatus.FAILED || status === WorkflowStatus.CANCELLED;
}

function checkWorkflow(e: Expectation, wf: Workflow | undefined): string {
  const status = wf?.status ?? WorkflowStatus.UNSPECIFIED;
  e.checkEnum("status", WorkflowStatus, status);
  e.checkString("state", wf?.state ?? "");
  e.checkInt("revision", wf?.revision ?? 0n);
  e.checkInt("run", wf?.run ?? 0);
  e.checkStrings("accepted_events", wf?.acceptedEvents ?? []);
  e.checkSubset("context", wf?.context);
  const pending = e.sub("pending_task");
  if (pending) {
    if (wf?.pendingTask) {
      checkTask(pending, wf.pendingTask);
      e.merge("pending_task", pending);
    } else {
      e.fail("pending_task: expected a pending task, the instance has none");
    }
  }
  const task = wf?.pendingTask ? `, pending task ${describeTask(wf.pendingTask)}` : "";
  return `${wf?.workflowId} ${WorkflowStatus[status]} in ${wf?.state} at revision ${wf?.revision}${task}`;
}

function checkTask(e: Expectation, task: Task): void {
  e.checkString("state", task.state);
  e.checkString("queue", task.queue);
  e.checkEnum("status", TaskStatus, task.status);
  e.checkInt("attempt", task.attempt);
}

/** Compares the tasks element by element, and their number. */
function checkTasks(e: Expectation, want: Value, got: readonly Task[]): void {
  if (!Array.isArray(want) || !want.every(isMap)) {
    e.fail(`tasks: expected a list of maps in the scenario, found ${JSON.stringify(want)}`);
    return;
  }
  want.forEach((w, i) => {
    const task = got[i];
    if (task) {
      const te = new Expectation(w);
      checkTask(te, task);
      e.merge(`tasks[${i}]`, te);
    }
  });
  if (got.length !== want.length) {
    e.fail(`tasks: expected ${want.length} tasks, ListTasks gave ${got.length}: ${got.map(describeTask).join(", ") || "none"}`);
  }
}

function describeTask(task: Task): string {
  return `${task.state}/${task.queue} ${TaskStatus[task.status]} attempt ${task.attempt}`;
}

function describeWorked(worked: ReadonlyMap<string, number>): string {
  const parts = [...worked].map(([queue, n]) => `${queue} ×${n}`);
  return parts.length > 0 ? parts.join(", ") : "no tasks";
}

function isMap(v: Value): v is ValueMap {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function checkSignal(e: Expectation, response: SignalWorkflowResponse): string {
  e.checkBool("accepted", response.accepted);
  e.checkEnum("reason", SignalRejection, response.reason);
  const summary = checkWorkflow(e, response.workflow);
  return response.accepted ? summary : `not accepted (${SignalRejection[response.reason]}); ${summary}`;
}

function checkDiagnostics(e: Expectation, response: GetDiagnosticsResponse): string {
  const version = response.build?.version ?? "";
  e.checkBool("build_version_set", version !== "");
  e.checkContains("definitions_contain", response.definitions);
  return `build ${JSON.stringify(version)}, ${response.definitions.length} definitions`;
}

function checkWatchMessage(e: Expectation, m: WatchWorkflowResponse): void {
  e.checkEnum("type", WatchEventType, m.type);
  e.checkInt("revision", m.revision);
  e.checkString("event", m.event);
  e.checkEnum("status", WorkflowStatus, m.workflow?.status ?? WorkflowStatus.UNSPECIFIED);
  e.checkString("state", m.workflow?.state ?? "");
}

function describeWatchMessage(m: WatchWorkflowResponse): string {
  return `${WatchEventType[m.type]} ${WorkflowStatus[m.workflow?.status ?? 0]} at revision ${m.revision}`;
}
