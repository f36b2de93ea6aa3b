// An in-process WorkflowService (and TaskService) over HTTP/2 with the gRPC protocol, for
// tests: serve() runs any implementation; fakeWorkflowService() behaves like the example
// definitions as far as the conformance scenario looks, with knobs that make it deviate on
// purpose; FakeTaskService leases tasks as the server does and records every call.
import { createServer, type Http2Server, type ServerHttp2Session } from "node:http2";
import type { AddressInfo } from "node:net";
import { EventEmitter, once } from "node:events";

import { clone, create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ConnectRouter, type ServiceImpl } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";

import { ErrorInfoSchema } from "../src/error_info.js";
import {
  SignalRejection,
  WatchEventType,
  WatchWorkflowResponseSchema,
  WorkflowService,
  type WatchWorkflowResponse,
} from "../src/gen/statewright/v1/workflow_service_pb.js";
import { WorkflowSchema, WorkflowStatus, type Workflow } from "../src/gen/statewright/v1/workflow_pb.js";
import { TaskSchema, TaskStatus, type Task } from "../src/gen/statewright/v1/task_pb.js";
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

export interface Served {
  target: string;
  close(): Promise<void>;
  /** Destroys every client connection, as a crashing server or a broken network would. */
  dropConnections(): void;
}

/** Serves impl, and tasks when given (without it, TaskService calls are UNIMPLEMENTED). */
export async function serve(impl: WorkflowServiceImpl, tasks?: TaskServiceImpl): Promise<Served> {
  const handler = connectNodeAdapter({
    grpc: true,
    connect: false,
    grpcWeb: false,
    routes: (router: ConnectRouter) => {
      router.service(WorkflowService, impl);
      if (tasks) router.service(TaskService, tasks);
    },
  });
  const server: Http2Server = createServer(handler);
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

export interface FakeKnobs {
  mismatchReason?: string;
  watchEndError?: ConnectError;
  skipRevision?: boolean;
  duplicatePage?: boolean;
  signalStatus?: WorkflowStatus;
}

const terminal = (s: WorkflowStatus) =>
  s === WorkflowStatus.COMPLETED || s === WorkflowStatus.FAILED || s === WorkflowStatus.CANCELLED;

export function fakeWorkflowService(knobs: FakeKnobs = {}): WorkflowServiceImpl {
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

  return {
    startWorkflow(req) {
      const name = `workflows/${req.workflowId}`;
      if (workflows.has(name)) {
        throw statewrightError(Code.AlreadyExists, "WORKFLOW_ALREADY_EXISTS", { workflow_id: req.workflowId });
      }
      const wf = create(WorkflowSchema, { name, workflowId: req.workflowId, definition: req.definition, version: 1 });
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
      return { workflow: clone(WorkflowSchema, find(req.name)) };
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
  readonly failures: FailTaskRequest[] = [];
  /** Errors that the next calls of each method throw, in order, before it behaves again. */
  readonly errors: Record<TaskMethod, ConnectError[]> = { poll: [], heartbeat: [], complete: [], fail: [] };
  /** Called with each poll request as it arrives. */
  onPoll: ((req: PollTasksRequest) => void) | undefined;
  /** How long a lease from a poll lasts, and one extended by a heartbeat (ms from now). */
  leaseMs = 30_000;
  extendMs = 60_000;

  private readonly tasks = new Map<string, Task>();
  private readonly completed = new Map<string, CompleteTaskResponse>();
  private readonly failed = new Map<string, FailTaskResponse>();
  private readonly changed = new EventEmitter();
  private count = 0;

  constructor() {
    this.changed.setMaxListeners(0);
  }

  /** Schedules a task on queue; returns its name. */
  schedule(queue: string, input: JsonObject = {}): string {
    const n = ++this.count;
    const name = `workflows/wf-${n}/tasks/t-${n}`;
    this.tasks.set(
      name,
      create(TaskSchema, { name, workflow: `workflows/wf-${n}`, state: "charge", queue, input, status: TaskStatus.SCHEDULED }),
    );
    this.emit();
    return name;
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

    completeTask: (req) => {
      this.record(this.completions, req, "complete");
      const earlier = req.requestId ? this.completed.get(req.requestId) : undefined;
      if (earlier) return earlier;
      const task = this.leased(req.name, req.leaseToken);
      task.status = TaskStatus.COMPLETED;
      task.leaseToken = "";
      const response = create(CompleteTaskResponseSchema, { task: clone(TaskSchema, task) });
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
      const response = create(FailTaskResponseSchema, { task: clone(TaskSchema, task) });
      if (req.requestId) this.failed.set(req.requestId, response);
      this.emit();
      return response;
    },

    getTask: (req) => {
      const task = clone(TaskSchema, this.task(req.name));
      task.leaseToken = "";
      return { task };
    },
  };
}
