// An in-process WorkflowService (and TaskService and BatchService) over HTTP/2 with the gRPC protocol, for
// tests: serve() runs any implementation; fakeWorkflowService() behaves like the example
// definitions as far as the conformance scenario looks, with knobs that make it deviate on
// purpose (given a FakeTaskService, its order-fulfilment instances hand their task states
// to it); FakeTaskService leases tasks as the server does and records every call.
import {
  createSecureServer,
  createServer,
  type Http2SecureServer,
  type Http2Server,
  type SecureServerOptions,
  type ServerHttp2Session,
} from "node:http2";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import { EventEmitter, once } from "node:events";

import { clone, create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ConnectRouter, type ServiceImpl } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";

import { ErrorInfoSchema, RetryInfoSchema } from "../src/error_info.js";
import { BatchService } from "../src/gen/statewright/v1/batch_service_pb.js";
import {
  IfExistsPolicy,
  SignalRejection,
  WatchEventType,
  WatchWorkflowResponseSchema,
  WorkflowService,
  type WatchWorkflowResponse,
} from "../src/gen/statewright/v1/workflow_service_pb.js";
import { WorkflowSchema, WorkflowStatus, type Workflow } from "../src/gen/statewright/v1/workflow_pb.js";
import { TaskErrorSchema, TaskSchema, TaskStatus, type Task, type TaskError } from "../src/gen/statewright/v1/task_pb.js";
import {
  CompleteTaskResponseSchema,
  FailTaskResponseSchema,
  TaskService,
  type CompleteTaskRequest,
  type CompleteTaskResponse,
  type FailTaskRequest,
  type FailTaskResponse,
  type HeartbeatTaskRequest,
  type PollTasksRequest,
} from "../src/gen/statewright/v1/task_service_pb.js";

export type WorkflowServiceImpl = Partial<ServiceImpl<typeof WorkflowService>>;
export type TaskServiceImpl = Partial<ServiceImpl<typeof TaskService>>;
export type BatchServiceImpl = Partial<ServiceImpl<typeof BatchService>>;

export interface Served {
  target: string;
  /** Over TLS: the subjectaltname of each client certificate presented, in order. */
  peers: string[];
  close(): Promise<void>;
  /** Destroys every client connection, as a crashing server or a broken network would. */
  dropConnections(): void;
}

export interface ServeOptions {
  /** Serve TLS with these settings (key, cert; ca and requestCert for mTLS) instead of plaintext. */
  tls?: SecureServerOptions;
  /** Serve BatchService with this implementation too (without it, its calls are UNIMPLEMENTED). */
  batches?: BatchServiceImpl;
}

/** Serves impl, and tasks when given (without it, TaskService calls are UNIMPLEMENTED). */
export async function serve(impl: WorkflowServiceImpl, tasks?: TaskServiceImpl, options: ServeOptions = {}): Promise<Served> {
  const handler = connectNodeAdapter({
    grpc: true,
    connect: false,
    grpcWeb: false,
    routes: (router: ConnectRouter) => {
      router.service(WorkflowService, impl);
      if (tasks) router.service(TaskService, tasks);
      if (options.batches) router.service(BatchService, options.batches);
    },
  });
  const server: Http2Server | Http2SecureServer = options.tls ? createSecureServer(options.tls, handler) : createServer(handler);
  const peers: string[] = [];
  server.on("secureConnection", (socket: TLSSocket) => {
    const san = socket.getPeerCertificate().subjectaltname;
    if (san) peers.push(san);
  });
  const sessions = new Set<ServerHttp2Session>();
  server.on("session", (session: ServerHttp2Session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    target: `127.0.0.1:${port}`,
    peers,
    dropConnections: () => {
      for (const session of sessions) session.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Drop idle client sessions so that close() does not wait for them.
        for (const session of sessions) session.destroy();
      }),
  };
}

export function statewrightError(code: Code, reason: string, metadata: Record<string, string> = {}): ConnectError {
  return new ConnectError(reason, code, undefined, [
    { desc: ErrorInfoSchema, value: { reason, domain: "statewright.dev", metadata } },
  ]);
}

/** RESOURCE_EXHAUSTED RATE_LIMITED with a RetryInfo, as the server answers a caller over its rate. */
export function rateLimited(retryDelayMs: number): ConnectError {
  const retryDelay = { seconds: BigInt(Math.floor(retryDelayMs / 1000)), nanos: (retryDelayMs % 1000) * 1_000_000 };
  return new ConnectError("key:worker is over its rate of 5 requests per second", Code.ResourceExhausted, undefined, [
    { desc: ErrorInfoSchema, value: { reason: "RATE_LIMITED", domain: "statewright.dev", metadata: { limit: "5/s" } } },
    { desc: RetryInfoSchema, value: { retryDelay } },
  ]);
}

export interface FakeKnobs {
  mismatchReason?: string;
  watchEndError?: ConnectError;
  skipRevision?: boolean;
  duplicatePage?: boolean;
  signalStatus?: WorkflowStatus;
  /** order-fulfilment: the `attempts` that a given-up task's failure says. */
  failureAttempts?: number;
  /** order-fulfilment: the status its pending task is shown with. */
  pendingTaskStatus?: TaskStatus;
}

const terminal = (s: WorkflowStatus) =>
  s === WorkflowStatus.COMPLETED || s === WorkflowStatus.FAILED || s === WorkflowStatus.CANCELLED;

export function fakeWorkflowService(knobs: FakeKnobs = {}, tasks?: FakeTaskService): WorkflowServiceImpl {
  const workflows = new Map<string, Workflow>();
  const history = new Map<string, WatchWorkflowResponse[]>();
  const changed = new EventEmitter();
  changed.setMaxListeners(0);

  const save = (wf: Workflow, event: string): Workflow => {
    wf.revision++;
    if (terminal(wf.status)) wf.acceptedEvents = [];
    const snapshot = clone(WorkflowSchema, wf);
    const list = history.get(wf.name) ?? [];
    list.push(create(WatchWorkflowResponseSchema, { type: WatchEventType.STEP, revision: wf.revision, workflow: snapshot, event }));
    history.set(wf.name, list);
    changed.emit("change");
    return snapshot;
  };
  const find = (name: string): Workflow => {
    const wf = workflows.get(name);
    if (!wf) throw statewrightError(Code.NotFound, "WORKFLOW_NOT_FOUND", { name });
    return wf;
  };
  /** A snapshot with the instance's pending task as the task service has it now. */
  const withPending = (snapshot: Workflow): Workflow => {
    const pending = tasks?.pending(snapshot.name);
    if (pending && knobs.pendingTaskStatus !== undefined) pending.status = knobs.pendingTaskStatus;
    snapshot.pendingTask = pending;
    return snapshot;
  };

  // order-fulfilment, as examples/definitions/order-fulfilment.yaml runs it: each report
  // takes one step, and a given-up shipment is refunded. Retryable failures are not retried.
  const settle = (task: Task, report: TaskReport): Workflow | undefined => {
    const wf = workflows.get(task.workflow);
    if (!wf || !tasks || wf.status !== WorkflowStatus.RUNNING) return undefined;
    const context: JsonObject = { ...wf.context };
    const order = wf.workflowId;
    let next: { queue: string; state: string; input: JsonObject } | undefined;
    if ("result" in report) {
      const id = String(report.result["id"]);
      if (task.state === "charging") {
        Object.assign(context, { charge_id: id });
        next = { queue: "shipping", state: "shipping", input: { order, items: context["items"] ?? [] } };
      } else if (task.state === "shipping") {
        Object.assign(context, { tracking: String(report.result["tracking"]) });
      } else {
        Object.assign(context, { refund_id: id });
      }
      wf.state = { charging: "shipping", shipping: "shipped", refunding: "refunded" }[task.state] ?? "";
    } else if (report.gaveUp) {
      const { type, message, details = {} } = report.error;
      context["failure"] = { type, message, details, attempts: knobs.failureAttempts ?? task.attempt };
      if (task.state === "shipping") {
        wf.state = "refunding";
        next = { queue: "payments", state: "refunding", input: { order, refund: context["charge_id"] ?? "", amount: context["total"] ?? 0 } };
      } else {
        wf.state = "declined";
      }
    } else {
      return undefined;
    }
    wf.context = context;
    if (!next) wf.status = WorkflowStatus.COMPLETED;
    const snapshot = save(wf, "");
    if (next) tasks.schedule(next.queue, next.input, { workflow: wf.name, state: next.state, revision: wf.revision });
    return withPending(snapshot);
  };
  if (tasks) tasks.onSettle = settle;

  return {
    startWorkflow(req) {
      const name = `workflows/${req.workflowId}`;
      const old = workflows.get(name);
      if (old) {
        const finished = [WorkflowStatus.COMPLETED, WorkflowStatus.FAILED, WorkflowStatus.CANCELLED].includes(old.status);
        if (req.ifExists === IfExistsPolicy.RESTART && finished) {
          // The next run, as the server makes it: from the first state again, the
          // instance's context under the request's input.
          const context = { ...(old.context ?? {}), ...(req.input ?? {}) };
          Object.assign(old, { context, run: old.run + 1, state: "awaiting_approval", status: WorkflowStatus.WAITING, acceptedEvents: ["approve", "reject"] });
          return { workflow: save(old, "restart"), created: true };
        }
        throw statewrightError(Code.AlreadyExists, "WORKFLOW_ALREADY_EXISTS", { workflow_id: req.workflowId });
      }
      const wf = create(WorkflowSchema, { name, workflowId: req.workflowId, definition: req.definition, version: 1, run: 1 });
      switch (req.definition) {
        case "mail-approval":
          Object.assign(wf, { state: "awaiting_approval", status: WorkflowStatus.WAITING, acceptedEvents: ["approve", "reject"] });
          break;
        case "review-loop":
          Object.assign(wf, { state: "evaluating", status: WorkflowStatus.RUNNING, acceptedEvents: ["score"] });
          break;
        case "order-pricing":
          Object.assign(wf, { state: "shipped", status: WorkflowStatus.COMPLETED });
          break;
        case "order-fulfilment": {
          if (!tasks) throw statewrightError(Code.NotFound, "DEFINITION_NOT_FOUND", { definition: req.definition });
          const items = req.input?.["items"] ?? [];
          const price = req.input?.["price"] ?? 0;
          const total = typeof price === "number" && Array.isArray(items) ? price * items.length : 0;
          const context = { items, price, total, charge_id: "", tracking: "", refund_id: "", failure: {}, log: ["received"] };
          Object.assign(wf, { state: "charging", status: WorkflowStatus.RUNNING, context });
          workflows.set(name, wf);
          const snapshot = save(wf, "");
          tasks.schedule("payments", { order: req.workflowId, amount: total }, { workflow: name, state: "charging", revision: wf.revision });
          return { workflow: withPending(snapshot), created: true };
        }
        default:
          throw statewrightError(Code.NotFound, "DEFINITION_NOT_FOUND", { definition: req.definition });
      }
      workflows.set(name, wf);
      return { workflow: save(wf, ""), created: true };
    },

    resumeWorkflow(req) {
      const wf = find(req.name);
      if (req.expectedRevision !== 0n && req.expectedRevision !== wf.revision) {
        throw statewrightError(Code.Aborted, knobs.mismatchReason ?? "REVISION_MISMATCH", {
          actual_revision: String(wf.revision),
          expected_revision: String(req.expectedRevision),
        });
      }
      // A finished instance stays in the state it finished from, as the server's do.
      const state = req.event === "reject" ? "rejected" : "send";
      Object.assign(wf, { state, status: WorkflowStatus.COMPLETED });
      return { workflow: save(wf, req.event) };
    },

    signalWorkflow(req) {
      const wf = find(req.name);
      let response;
      if (wf.status !== WorkflowStatus.RUNNING) {
        response = { accepted: false, reason: SignalRejection.NOT_RUNNING, workflow: clone(WorkflowSchema, wf) };
      } else if (wf.state === "evaluating" && req.event === "score") {
        const score = req.payload?.["score"];
        if (typeof score === "number" && score >= 0.8) {
          Object.assign(wf, { state: "accepted", status: WorkflowStatus.COMPLETED });
        } else {
          Object.assign(wf, { state: "improving", acceptedEvents: ["revised"] });
        }
        response = { accepted: true, workflow: save(wf, req.event) };
      } else if (wf.state === "improving" && req.event === "revised") {
        Object.assign(wf, { state: "evaluating", acceptedEvents: ["score"] });
        response = { accepted: true, workflow: save(wf, req.event) };
      } else {
        throw statewrightError(Code.InvalidArgument, "UNKNOWN_EVENT", { event: req.event });
      }
      if (knobs.signalStatus !== undefined) response.workflow.status = knobs.signalStatus;
      return response;
    },

    getWorkflow(req) {
      return { workflow: withPending(clone(WorkflowSchema, find(req.name))) };
    },

    listWorkflows(req) {
      const matching = [...workflows.values()].filter((wf) => !req.definition || wf.definition === req.definition);
      const offset = req.pageToken ? Number(req.pageToken) : 0;
      const end = Math.min(offset + req.pageSize, matching.length);
      const page = matching.slice(offset, end);
      if (knobs.duplicatePage && offset > 0 && matching[0]) page.unshift(matching[0]);
      return { workflows: page, nextPageToken: end < matching.length ? String(end) : "" };
    },

    getDiagnostics() {
      return {
        build: { version: "0.0.0-fake" },
        definitions: ["definitions/mail-approval/versions/1", "definitions/review-loop/versions/1"],
      };
    },

    // As the server does: CURRENT first without after_revision; with it, the history after
    // it, and an empty OK stream when the instance ended at or before it.
    async *watchWorkflow(req, ctx) {
      const now = clone(WorkflowSchema, find(req.name));
      let next: bigint;
      let ended: boolean;
      if (req.afterRevision === undefined) {
        yield { type: WatchEventType.CURRENT, revision: now.revision, workflow: now };
        next = now.revision + 1n;
        ended = terminal(now.status);
      } else {
        next = req.afterRevision + 1n;
        ended = terminal(now.status) && next > now.revision;
      }
      while (!ended) {
        const list = history.get(req.name) ?? [];
        const message = list[Number(next) - 1];
        if (!message) {
          await once(changed, "change", { signal: ctx.signal });
          continue;
        }
        next++;
        ended = terminal(message.workflow?.status ?? WorkflowStatus.UNSPECIFIED);
        if (knobs.skipRevision) {
          if (!ended) continue;
          const skipped = clone(WatchWorkflowResponseSchema, message);
          skipped.revision++;
          if (skipped.workflow) skipped.workflow.revision++;
          yield skipped;
          continue;
        }
        yield message;
      }
      if (knobs.watchEndError) throw knobs.watchEndError;
    },
  };
}

type TaskMethod = "poll" | "heartbeat" | "complete" | "fail";

/** What a worker reported about a task: its result, or a failure and whether it gave up. */
export type TaskReport = { result: JsonObject } | { error: TaskError; gaveUp: boolean };

/** Where a scheduled task comes from: an instance of its own by default. */
export interface TaskOrigin {
  workflow: string;
  state: string;
  revision: bigint;
}

/**
 * A TaskService that leases scheduled tasks the way the server does (attempt, a fresh
 * lease token and expiry per lease; LEASE_SUPERSEDED for a lease that is not current,
 * TASK_CANCELLED and cancel_requested for a cancelled task, idempotent request ids) and
 * records every request, for worker tests. Leases never expire by themselves: a test
 * moves a lease on with supersede(), so that no outcome depends on timing.
 */
export class FakeTaskService {
  readonly polls: PollTasksRequest[] = [];
  /** The signal of each poll's call, in order: aborted once the client cancelled it. */
  readonly pollSignals: AbortSignal[] = [];
  readonly heartbeats: HeartbeatTaskRequest[] = [];
  readonly completions: CompleteTaskRequest[] = [];
  /** The traceparent header of each CompleteTask call ("" for none), in order. */
  readonly completionTraceparents: string[] = [];
  readonly failures: FailTaskRequest[] = [];
  /** Errors that the next calls of each method throw, in order, before it behaves again. */
  readonly errors: Record<TaskMethod, ConnectError[]> = { poll: [], heartbeat: [], complete: [], fail: [] };
  /** Called with each poll request as it arrives. */
  onPoll: ((req: PollTasksRequest) => void) | undefined;
  /** How long a lease from a poll lasts, and one extended by a heartbeat (ms from now). */
  leaseMs = 30_000;
  extendMs = 60_000;
  /**
   * Called after a completion or a failure changed a task, for the instance's step; what
   * it returns is the report's `workflow`.
   */
  onSettle: ((task: Task, report: TaskReport) => Workflow | undefined) | undefined;
  /** ListTasks pages hold at most this many tasks when the request sets no page_size. */
  listPageSize = 2;

  private readonly tasks = new Map<string, Task>();
  private readonly completed = new Map<string, CompleteTaskResponse>();
  private readonly failed = new Map<string, FailTaskResponse>();
  private readonly changed = new EventEmitter();
  private count = 0;

  constructor() {
    this.changed.setMaxListeners(0);
  }

  /** Schedules a task on queue; returns its name. */
  schedule(queue: string, input: JsonObject = {}, origin?: TaskOrigin): string {
    const n = ++this.count;
    const workflow = origin?.workflow ?? `workflows/wf-${n}`;
    const name = `${workflow}/tasks/t-${n}`;
    const { state = "charge", revision = 0n } = origin ?? {};
    this.tasks.set(name, create(TaskSchema, { name, workflow, state, queue, input, revision, status: TaskStatus.SCHEDULED }));
    this.emit();
    return name;
  }

  /** Gives scheduled task name the W3C trace context of the step that scheduled it. */
  traced(name: string, traceparent: string, tracestate = ""): void {
    const task = this.tasks.get(name);
    if (!task) throw new Error(`no task ${name}`);
    task.traceparent = traceparent;
    task.tracestate = tracestate;
  }

  /** The instance's unfinished task, as GetWorkflow shows it (without its lease token). */
  pending(workflow: string): Task | undefined {
    const unfinished = [TaskStatus.SCHEDULED, TaskStatus.LEASED, TaskStatus.BACKOFF];
    const task = [...this.tasks.values()].findLast((t) => t.workflow === workflow && unfinished.includes(t.status));
    return task && shown(task);
  }

  task(name: string): Task {
    const task = this.tasks.get(name);
    if (!task) throw statewrightError(Code.NotFound, "TASK_NOT_FOUND", { name });
    return task;
  }

  /** The task's state was left: heartbeats answer cancel_requested, reports TASK_CANCELLED. */
  cancel(name: string): void {
    this.task(name).status = TaskStatus.CANCELLED;
    this.emit();
  }

  /** The lease expired and another worker took the task: the holder's token is stale. */
  supersede(name: string): void {
    const task = this.task(name);
    task.attempt++;
    task.leaseToken = `lease-${++this.count}`;
    this.emit();
  }

  /**
   * Resolves once condition holds, re-checking after every call to the fake and every 10 ms
   * (for what happens in the client alone); rejects after timeoutMs, so a test that waits
   * for something that never comes fails instead of hanging.
   */
  async until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
    const deadline = AbortSignal.timeout(timeoutMs);
    while (!condition()) {
      if (deadline.aborted) throw new Error(`timed out waiting for ${what}`);
      await once(this.changed, "change", { signal: AbortSignal.any([deadline, AbortSignal.timeout(10)]) }).catch(() => undefined);
    }
  }

  /** Lets a test wake until() after changing something the fake cannot see. */
  emit(): void {
    this.changed.emit("change");
  }

  private record<T>(list: T[], req: T, method: TaskMethod): void {
    list.push(req);
    this.emit();
    const error = this.errors[method].shift();
    if (error) throw error;
  }

  private leased(name: string, leaseToken: string): Task {
    const task = this.task(name);
    if (task.status === TaskStatus.CANCELLED) throw statewrightError(Code.FailedPrecondition, "TASK_CANCELLED", { name });
    if (task.status !== TaskStatus.LEASED || task.leaseToken !== leaseToken) {
      throw statewrightError(Code.FailedPrecondition, "LEASE_SUPERSEDED", { name });
    }
    return task;
  }

  readonly impl: TaskServiceImpl = {
    pollTasks: async (req, ctx) => {
      this.pollSignals.push(ctx.signal);
      this.onPoll?.(req);
      this.record(this.polls, req, "poll");
      const waitMs = Number(req.wait?.seconds ?? 0n) * 1000 + (req.wait?.nanos ?? 0) / 1e6;
      const waited = AbortSignal.any([ctx.signal, AbortSignal.timeout(waitMs)]);
      for (;;) {
        const ready = [...this.tasks.values()].filter((t) => t.queue === req.queue && t.status === TaskStatus.SCHEDULED);
        if (ready.length > 0) {
          const leased = ready.slice(0, Math.max(req.maxTasks, 1));
          for (const task of leased) {
            task.status = TaskStatus.LEASED;
            task.attempt++;
            task.leaseToken = `lease-${++this.count}`;
            task.leaseExpireTime = timestampFromMs(Date.now() + this.leaseMs);
          }
          this.emit();
          return { tasks: leased.map((t) => clone(TaskSchema, t)) };
        }
        try {
          await once(this.changed, "change", { signal: waited });
        } catch {
          if (ctx.signal.aborted) throw new ConnectError("poll cancelled", Code.Canceled);
          return { tasks: [] };
        }
      }
    },

    heartbeatTask: (req) => {
      this.record(this.heartbeats, req, "heartbeat");
      const task = this.task(req.name);
      if (task.status === TaskStatus.CANCELLED) {
        return { leaseExpireTime: task.leaseExpireTime, cancelRequested: true };
      }
      this.leased(req.name, req.leaseToken);
      task.leaseExpireTime = timestampFromMs(Date.now() + this.extendMs);
      if (req.details) task.heartbeatDetails = req.details;
      return { leaseExpireTime: task.leaseExpireTime, cancelRequested: false };
    },

    completeTask: (req, ctx) => {
      this.completionTraceparents.push(ctx.requestHeader.get("traceparent") ?? "");
      this.record(this.completions, req, "complete");
      const earlier = req.requestId ? this.completed.get(req.requestId) : undefined;
      if (earlier) return earlier;
      const task = this.leased(req.name, req.leaseToken);
      task.status = TaskStatus.COMPLETED;
      task.leaseToken = "";
      const workflow = this.onSettle?.(task, { result: req.result ?? {} });
      const response = create(CompleteTaskResponseSchema, { task: clone(TaskSchema, task), workflow });
      if (req.requestId) this.completed.set(req.requestId, response);
      this.emit();
      return response;
    },

    failTask: (req) => {
      this.record(this.failures, req, "fail");
      const earlier = req.requestId ? this.failed.get(req.requestId) : undefined;
      if (earlier) return earlier;
      const task = this.leased(req.name, req.leaseToken);
      // Not rescheduled, so that a test sees each failure once.
      task.status = req.nonRetryable ? TaskStatus.FAILED : TaskStatus.BACKOFF;
      task.leaseToken = "";
      if (req.error) task.lastError = req.error;
      const workflow = this.onSettle?.(task, { error: task.lastError ?? create(TaskErrorSchema), gaveUp: req.nonRetryable });
      const response = create(FailTaskResponseSchema, { task: clone(TaskSchema, task), workflow });
      if (req.requestId) this.failed.set(req.requestId, response);
      this.emit();
      return response;
    },

    getTask: (req) => {
      return { task: shown(this.task(req.name)) };
    },

    // In the order tasks were scheduled, which is oldest first as the server lists them.
    listTasks: (req) => {
      const matching = [...this.tasks.values()].filter(
        (t) =>
          (!req.workflow || t.workflow === req.workflow) &&
          (!req.queue || t.queue === req.queue) &&
          (req.status === TaskStatus.UNSPECIFIED || t.status === req.status),
      );
      const offset = req.pageToken ? Number(req.pageToken) : 0;
      const end = Math.min(offset + (req.pageSize || this.listPageSize), matching.length);
      return { tasks: matching.slice(offset, end).map(shown), nextPageToken: end < matching.length ? String(end) : "" };
    },
  };
}

/** A copy of task without its lease token, as every call but PollTasks shows it. */
function shown(task: Task): Task {
  const copy = clone(TaskSchema, task);
  copy.leaseToken = "";
  return copy;
}
