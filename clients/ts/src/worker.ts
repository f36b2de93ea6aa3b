import { hostname } from "node:os";

import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate, timestampMs, type DurationSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";

import type { TaskServiceClient } from "./client.js";
import { errorReason, retryDelayMs } from "./error_info.js";
import type { Task, TaskError } from "./gen/statewright/v1/task_pb.js";
import type { FailTaskRequestSchema } from "./gen/statewright/v1/task_service_pb.js";
import { endTaskSpan, inSpan, spanHeaders, startTaskSpan } from "./tracing.js";

/** A leased task as its handler sees it. */
export interface WorkerTask {
  /** The task's resource name, `workflows/{workflow_id}/tasks/{task_id}`. */
  readonly name: string;
  /** The instance's resource name, `workflows/{workflow_id}`. */
  readonly workflow: string;
  /** The task state that scheduled it. */
  readonly state: string;
  readonly queue: string;
  /** What the state's `input` expression gave (an empty object when it gave nothing). */
  readonly input: JsonObject;
  /** This attempt, from 1. */
  readonly attempt: number;
  /** What the latest heartbeat of an earlier attempt carried: progress to resume from. */
  readonly heartbeatDetails: JsonObject | undefined;
  /** Why the previous attempt failed, if one did. */
  readonly lastError: TaskError | undefined;
  /** When the task times out whatever happens (its schedule_to_close). */
  readonly deadline: Date | undefined;
  /** An item of a fan-out (`map`): its index in the list; undefined for a state without `map`. */
  readonly itemIndex: number | undefined;
  /**
   * The W3C trace context of the step that scheduled the task ("" when the server was not
   * tracing). The handler already runs in the attempt's span, a child of it.
   */
  readonly traceparent: string;
  readonly tracestate: string;
}

export interface TaskContext {
  /**
   * Aborts when the handler should stop, with a TaskAbortError as its reason: the task was
   * cancelled (its state was left), its lease was lost, or the worker shut down and its
   * grace period ended. Whatever the handler returns after that is discarded.
   */
  readonly signal: AbortSignal;
  /**
   * Records progress: every automatic heartbeat from now on carries it (the next one comes
   * within a third of the lease), and a later attempt sees it as heartbeatDetails. The
   * heartbeats themselves need no call: the worker sends them while the handler runs.
   */
  heartbeat(details: JsonObject): void;
}

/**
 * Handles one task: resolves to the result that the state's `apply` reads as `result` (a
 * JSON object; undefined means {}), or throws to fail the attempt (see TaskFailure).
 */
export type TaskHandler = (task: WorkerTask, context: TaskContext) => Promise<JsonObject | void> | JsonObject | void;

export interface TaskFailureOptions {
  /** Anything else for the workflow to see, as `event.payload.details` of `task_failed`. */
  details?: JsonObject;
  /** Give up now whatever the retry policy says. */
  nonRetryable?: boolean;
  /** Retry after this long instead of the policy's backoff. */
  retryDelayMs?: number;
  /**
   * Close the task's concurrency key on its queue until then (an API's Retry-After, say):
   * no task of that key is handed out before it.
   */
  closeKeyUntil?: Date;
  cause?: unknown;
}

/**
 * Thrown by a handler to fail the attempt with a type of its choosing (an UPPER_SNAKE name
 * the definition can match on, say `CARD_DECLINED`). Any other error fails the attempt as
 * retryable, with the error's name (or class name) as its type.
 */
export class TaskFailure extends Error {
  override readonly name = "TaskFailure";
  readonly type: string;
  readonly details: JsonObject | undefined;
  readonly nonRetryable: boolean;
  readonly retryDelayMs: number | undefined;
  readonly closeKeyUntil: Date | undefined;

  constructor(type: string, message: string, options: TaskFailureOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    if (type === "") {
      throw new TypeError("TaskFailure: type must not be empty");
    }
    if (options.details !== undefined) {
      assertJsonObject(options.details, "TaskFailure details");
    }
    const delay = options.retryDelayMs;
    if (delay !== undefined && !(Number.isFinite(delay) && delay >= 0)) {
      throw new TypeError(`TaskFailure: retryDelayMs must be a finite number >= 0, not ${delay}`);
    }
    this.type = type;
    this.details = options.details;
    this.nonRetryable = options.nonRetryable ?? false;
    const until = options.closeKeyUntil;
    if (until !== undefined && !(until instanceof Date && Number.isFinite(until.getTime()))) {
      throw new TypeError(`TaskFailure: closeKeyUntil must be a valid Date, not ${String(until)}`);
    }
    this.retryDelayMs = delay;
    this.closeKeyUntil = until;
  }
}

/** Why a handler's signal aborted. */
export type TaskAbortKind = "CANCEL_REQUESTED" | "LEASE_LOST" | "WORKER_SHUTDOWN";

/** The reason of an aborted TaskContext.signal. */
export class TaskAbortError extends Error {
  override readonly name = "TaskAbortError";

  constructor(
    readonly kind: TaskAbortKind,
    message: string,
  ) {
    super(message);
  }
}

/** Where a worker reports what it cannot handle itself; console by default. */
export interface WorkerLogger {
  warn(message: string): void;
  error(message: string): void;
  /** Tasks dropped because they were cancelled or their lease moved on; silent by default. */
  debug?(message: string): void;
}

export interface WorkerOptions {
  /** At most this many handlers run at once (10). */
  concurrency?: number;
  /** Who polls, shown in the server's diagnostics: `{pid}@{hostname}` by default. */
  identity?: string;
  /** How long a poll waits for a task, 1 to 60 s (20 s); the call's deadline is 5 s longer. */
  pollWaitMs?: number;
  /**
   * After run()'s signal aborts, how long running handlers may go on (10 s); those still
   * running then are aborted and released for another worker to take at once.
   */
  shutdownGraceMs?: number;
  /** The first delay after a failed call (100 ms); it doubles, with jitter, up to maxBackoffMs. */
  initialBackoffMs?: number;
  /** The longest delay between failed calls (5 s). */
  maxBackoffMs?: number;
  logger?: WorkerLogger;
  /**
   * The largest answer the client receives: the client's readMaxBytes, or 4 MiB. Each poll
   * sends it as max_bytes, and the server leases only the tasks whose answer fits.
   */
  maxReceiveBytes?: number;
}

export interface WorkerRunOptions {
  /** Aborting it shuts the worker down gracefully; run() resolves when that is done. */
  signal?: AbortSignal;
}

const QUEUE = /^[a-z][a-z0-9-.]{0,62}$/;
const MAX_TASKS_PER_POLL = 100;
/** The range of a poll's max_bytes the server takes. */
const MIN_POLL_BYTES = 16 * 1024;
const MAX_POLL_BYTES = 256 * 1024 * 1024;
const DEFAULT_RECEIVE_BYTES = 4 * 1024 * 1024;
const POLL_DEADLINE_MARGIN_MS = 5_000;
/** A lease is never heartbeated more often than this, whatever the clocks say. */
const MIN_HEARTBEAT_MS = 100;
/** Assumed when a lease comes without an expiry, so the first heartbeat comes early. */
const DEFAULT_LEASE_MS = 10_000;
const RELEASE_TIMEOUT_MS = 5_000;

const defaultLogger: WorkerLogger = {
  warn: (message) => console.warn(message),
  error: (message) => console.error(message),
};

/**
 * Polls task queues and runs their handlers: at most `concurrency` at once, each task's
 * lease kept alive by automatic heartbeats, results and failures reported once, with
 * retries, and a graceful shutdown when run()'s signal aborts.
 *
 *   const worker = new Worker(client, { concurrency: 8 });
 *   worker.register("payments", async (task, { signal }) => ({ id: "ch-" + task.input.order }));
 *   await worker.run({ signal });
 */
export class Worker {
  private readonly handlers = new Map<string, TaskHandler>();
  private readonly concurrency: number;
  private readonly identity: string;
  private readonly pollWaitMs: number;
  private readonly shutdownGraceMs: number;
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly logger: WorkerLogger;
  private readonly maxBytes: number;
  private running = false;

  constructor(
    private readonly client: TaskServiceClient,
    options: WorkerOptions = {},
  ) {
    this.concurrency = positiveInteger(options.concurrency ?? 10, "concurrency");
    this.identity = options.identity ?? `${process.pid}@${hostname()}`;
    this.pollWaitMs = options.pollWaitMs ?? 20_000;
    if (!(this.pollWaitMs >= 1_000 && this.pollWaitMs <= 60_000)) {
      throw new RangeError(`Worker: pollWaitMs must be between 1000 and 60000, not ${options.pollWaitMs}`);
    }
    this.shutdownGraceMs = nonNegative(options.shutdownGraceMs ?? 10_000, "shutdownGraceMs");
    this.initialBackoffMs = nonNegative(options.initialBackoffMs ?? 100, "initialBackoffMs");
    this.maxBackoffMs = Math.max(nonNegative(options.maxBackoffMs ?? 5_000, "maxBackoffMs"), this.initialBackoffMs);
    this.logger = options.logger ?? defaultLogger;
    const receives = options.maxReceiveBytes ?? (client as { readMaxBytes?: number }).readMaxBytes;
    const limit = positiveInteger(receives ?? DEFAULT_RECEIVE_BYTES, "maxReceiveBytes");
    this.maxBytes = Math.min(Math.max(limit, MIN_POLL_BYTES), MAX_POLL_BYTES);
  }

  /** Handles the tasks of queue with handler; one handler per queue. */
  register(queue: string, handler: TaskHandler): this {
    if (this.running) {
      throw new Error("Worker.register: the worker is running");
    }
    if (!QUEUE.test(queue)) {
      throw new TypeError(`Worker.register: queue ${JSON.stringify(queue)} does not match ${QUEUE.source}`);
    }
    if (this.handlers.has(queue)) {
      throw new Error(`Worker.register: queue ${queue} already has a handler`);
    }
    this.handlers.set(queue, handler);
    return this;
  }

  /**
   * Polls every registered queue until signal aborts, then shuts down: no more polls,
   * running handlers get shutdownGraceMs to finish, and those still running are aborted
   * and released (FailTask `WORKER_SHUTDOWN`, retry at once). Resolves when that is done.
   *
   * While the server is unavailable (UNAVAILABLE, DEADLINE_EXCEEDED, a refused
   * connection) polls back off and go on. A poll failing otherwise (INVALID_ARGUMENT,
   * UNIMPLEMENTED, PERMISSION_DENIED, ...) will not get better by itself: the worker shuts
   * down as above and run() rejects with that ConnectError.
   */
  async run(options: WorkerRunOptions = {}): Promise<void> {
    if (this.handlers.size === 0) {
      throw new Error("Worker.run: no handler registered");
    }
    if (this.running) {
      throw new Error("Worker.run: already running");
    }
    this.running = true;
    const { signal } = options;
    const run: RunState = {
      stop: new AbortController(),
      slots: new Slots(this.concurrency, this.handlers.size),
      active: new Set(),
      fatal: undefined,
    };
    const onAbort = () => run.stop.abort();
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) {
      run.stop.abort();
    }
    try {
      await Promise.all([...this.handlers].map(([queue, handler]) => this.pollLoop(queue, handler, run)));
      await this.drain(run);
    } finally {
      signal?.removeEventListener("abort", onAbort);
      this.running = false;
    }
    if (run.fatal !== undefined) {
      throw run.fatal;
    }
  }

  private async pollLoop(queue: string, handler: TaskHandler, run: RunState): Promise<void> {
    const { stop, slots } = run;
    const backoff = new Backoff(this.initialBackoffMs, this.maxBackoffMs);
    while (!stop.signal.aborted) {
      const reserved = await slots.reserve(stop.signal);
      if (reserved === 0) {
        break;
      }
      let tasks: Task[];
      try {
        const response = await this.client.pollTasks(
          {
            queue,
            identity: this.identity,
            maxTasks: reserved,
            wait: duration(this.pollWaitMs),
            maxBytes: this.maxBytes,
          },
          { signal: stop.signal, timeoutMs: this.pollWaitMs + POLL_DEADLINE_MARGIN_MS },
        );
        tasks = response.tasks;
      } catch (err) {
        slots.settlePoll(reserved, 0);
        if (stop.signal.aborted) {
          break;
        }
        const error = ConnectError.from(err);
        if (!transient(error)) {
          this.logger.error(`statewright worker: polling ${queue} failed, shutting down: ${describe(error)}`);
          run.fatal ??= error;
          stop.abort();
          break;
        }
        const delay = retryDelay(error, backoff);
        this.logger.warn(`statewright worker: polling ${queue} failed, retrying in ${Math.round(delay)} ms: ${describe(error)}`);
        await sleep(delay, stop.signal);
        continue;
      }
      backoff.reset();
      if (tasks.length > reserved) {
        this.logger.warn(`statewright worker: asked ${queue} for ${reserved} tasks, got ${tasks.length}`);
      }
      slots.settlePoll(reserved, tasks.length);
      for (const task of tasks) {
        this.start(task, handler, run);
      }
    }
  }

  private start(task: Task, handler: TaskHandler, run: RunState): void {
    const execution = new Execution(task, this.client, this.logger, new Backoff(this.initialBackoffMs, this.maxBackoffMs));
    run.active.add(execution);
    void execution.run(handler).finally(() => {
      run.active.delete(execution);
      run.slots.finish();
    });
  }

  private async drain(run: RunState): Promise<void> {
    const pending = [...run.active];
    if (pending.length > 0 && this.shutdownGraceMs > 0) {
      const grace = new AbortController();
      await Promise.race([Promise.all(pending.map((e) => e.settled)), sleep(this.shutdownGraceMs, grace.signal)]);
      grace.abort();
    }
    await Promise.all([...run.active].map((e) => e.release()));
  }
}

interface RunState {
  /** Aborts to stop polling: run()'s signal aborted, or a poll failed for good. */
  stop: AbortController;
  slots: Slots;
  active: Set<Execution>;
  fatal: ConnectError | undefined;
}

type Phase =
  /** The handler runs. */
  | "running"
  /** The handler settled; its result or failure is being delivered. */
  | "reporting"
  /** Cancelled, lease lost, delivered or released: nothing more is sent about the task. */
  | "over";

/** One leased attempt: the handler, its heartbeats, and the one report about it. */
class Execution {
  /** Settles when the worker is done with the attempt (never rejects). */
  settled: Promise<void> = Promise.resolve();
  private phase: Phase = "running";
  private readonly handlerAbort = new AbortController();
  /** Cancels the worker's own calls about this attempt (heartbeats, retries). */
  private readonly calls = new AbortController();
  private details: JsonObject | undefined;
  private leaseExpireMs: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly task: Task,
    private readonly client: TaskServiceClient,
    private readonly logger: WorkerLogger,
    private readonly backoff: Backoff,
  ) {
    this.leaseExpireMs = task.leaseExpireTime ? timestampMs(task.leaseExpireTime) : Date.now() + DEFAULT_LEASE_MS;
  }

  run(handler: TaskHandler): Promise<void> {
    this.settled = this.execute(handler).catch((err: unknown) => {
      this.logger.error(`statewright worker: ${this.task.name}: ${describe(err)}`);
    });
    return this.settled;
  }

  /**
   * At the end of the grace period: a handler still running is aborted and its attempt
   * handed back at once; a report still being retried is abandoned (the lease will expire).
   */
  async release(): Promise<void> {
    const phase = this.phase;
    this.end();
    if (phase === "reporting") {
      this.logger.warn(`statewright worker: ${this.task.name}: shut down before its report got through`);
      return;
    }
    if (phase !== "running") {
      return;
    }
    this.handlerAbort.abort(new TaskAbortError("WORKER_SHUTDOWN", "the worker shut down before the handler finished"));
    try {
      await this.client.failTask(
        {
          name: this.task.name,
          leaseToken: this.task.leaseToken,
          error: { type: "WORKER_SHUTDOWN", message: "the worker shut down before the task finished", details: this.details },
          retryDelay: duration(0),
          requestId: this.requestId("fail"),
        },
        { timeoutMs: RELEASE_TIMEOUT_MS },
      );
    } catch (err) {
      if (!dropReason(ConnectError.from(err))) {
        this.logger.warn(`statewright worker: ${this.task.name}: could not be released: ${describe(err)}`);
      }
    }
  }

  private async execute(handler: TaskHandler): Promise<void> {
    this.scheduleHeartbeat();
    let request: () => Promise<unknown>;
    // The attempt's span: the handler runs in it, and the report is its child and carries it.
    const span = startTaskSpan(this.task);
    const traced = spanHeaders(span);
    const report = <T>(call: () => Promise<T>) => () => inSpan(span, call);
    try {
      const value = await inSpan(span, () =>
        handler(workerTask(this.task), {
          signal: this.handlerAbort.signal,
          heartbeat: (details: JsonObject) => {
            assertJsonObject(details, "heartbeat details");
            this.details = details;
          },
        }),
      );
      const result = value ?? {};
      assertJsonObject(result, "the handler's result");
      endTaskSpan(span);
      request = report(() =>
        this.client.completeTask(
          { name: this.task.name, leaseToken: this.task.leaseToken, result, requestId: this.requestId("complete"), ...traced },
          { signal: this.calls.signal },
        ),
      );
    } catch (err) {
      const failure = { ...this.failure(err), ...traced };
      endTaskSpan(span, failure.error?.type);
      request = report(() => this.client.failTask(failure, { signal: this.calls.signal }));
    }
    if (this.phase !== "running") {
      return;
    }
    this.phase = "reporting";
    try {
      await this.deliver(request);
    } finally {
      this.end();
    }
  }

  private failure(err: unknown): MessageInitShape<typeof FailTaskRequestSchema> {
    const base = { name: this.task.name, leaseToken: this.task.leaseToken, requestId: this.requestId("fail") };
    if (err instanceof TaskFailure) {
      return {
        ...base,
        error: { type: err.type, message: err.message, details: err.details },
        nonRetryable: err.nonRetryable,
        retryDelay: err.retryDelayMs === undefined ? undefined : duration(err.retryDelayMs),
        closeKeyUntil: err.closeKeyUntil === undefined ? undefined : timestampFromDate(err.closeKeyUntil),
      };
    }
    return { ...base, error: { type: errorType(err), message: err instanceof Error ? err.message : String(err) } };
  }

  /** Sends the report, retrying what the server may answer later, while the lease lasts. */
  private async deliver(request: () => Promise<unknown>): Promise<void> {
    const backoff = new Backoff(this.backoff.initialMs, this.backoff.maxMs);
    for (;;) {
      try {
        await request();
        return;
      } catch (err) {
        if (this.calls.signal.aborted) {
          return;
        }
        const error = ConnectError.from(err);
        const drop = dropReason(error);
        if (drop) {
          this.logger.debug?.(`statewright worker: ${this.task.name}: dropped, ${drop.why}`);
          return;
        }
        if (!transient(error)) {
          this.logger.error(`statewright worker: ${this.task.name}: the server refused the report: ${describe(error)}`);
          return;
        }
        if (Date.now() >= this.leaseExpireMs) {
          this.logger.warn(`statewright worker: ${this.task.name}: the lease expired before the report got through: ${describe(error)}`);
          return;
        }
        await sleep(retryDelay(error, backoff), this.calls.signal);
      }
    }
  }

  private scheduleHeartbeat(delayMs?: number): void {
    if (this.phase === "over") {
      return;
    }
    const delay = delayMs ?? (this.leaseExpireMs - Date.now()) / 3;
    this.timer = setTimeout(() => void this.heartbeat(), Math.max(delay, MIN_HEARTBEAT_MS));
  }

  private async heartbeat(): Promise<void> {
    this.timer = undefined;
    try {
      const response = await this.client.heartbeatTask(
        { name: this.task.name, leaseToken: this.task.leaseToken, details: this.details },
        { signal: this.calls.signal, timeoutMs: Math.max(this.leaseExpireMs - Date.now(), 1_000) },
      );
      this.backoff.reset();
      if (response.leaseExpireTime) {
        this.leaseExpireMs = timestampMs(response.leaseExpireTime);
      }
      if (response.cancelRequested && this.phase === "running") {
        this.drop("CANCEL_REQUESTED", "the task was cancelled");
        return;
      }
      this.scheduleHeartbeat();
    } catch (err) {
      if (this.calls.signal.aborted) {
        return;
      }
      const error = ConnectError.from(err);
      if (this.phase === "running") {
        const drop = dropReason(error);
        if (drop) {
          this.drop(drop.kind, drop.why);
          return;
        }
        if (Date.now() >= this.leaseExpireMs) {
          this.drop("LEASE_LOST", `the lease expired while heartbeats failed: ${describe(error)}`);
          return;
        }
        const log = transient(error) ? this.logger.warn : this.logger.error;
        log.call(this.logger, `statewright worker: ${this.task.name}: heartbeat failed: ${describe(error)}`);
      }
      // Sooner than the backoff when the lease is about to run out.
      this.scheduleHeartbeat(Math.min(retryDelay(error, this.backoff), (this.leaseExpireMs - Date.now()) / 3));
    }
  }

  /** Stops the handler; nothing will be reported for this attempt. */
  private drop(kind: TaskAbortKind, why: string): void {
    this.logger.debug?.(`statewright worker: ${this.task.name}: dropped, ${why}`);
    this.end();
    this.handlerAbort.abort(new TaskAbortError(kind, why));
  }

  private end(): void {
    this.phase = "over";
    clearTimeout(this.timer);
    this.timer = undefined;
    this.calls.abort();
  }

  /** Stable for the attempt, so that a retried call gets the first call's answer. */
  private requestId(kind: "complete" | "fail"): string {
    return `${this.task.name}#${this.task.attempt}#${kind}`;
  }
}

/**
 * The concurrency limit, shared by every queue's poller: a poll reserves the slots it asks
 * for (max_tasks) until it answers, so the worker never leases more than it can start.
 * Pollers share the free slots fairly instead of the first one taking them all.
 */
class Slots {
  /** Running tasks plus slots reserved by polls in flight. */
  private used = 0;
  private polling = 0;
  private waiters: (() => void)[] = [];

  constructor(
    private readonly capacity: number,
    private readonly pollers: number,
  ) {}

  /** Waits for a free slot, then reserves this poller's share; 0 once signal aborts. */
  async reserve(signal: AbortSignal): Promise<number> {
    while (this.capacity - this.used <= 0) {
      if (signal.aborted) {
        return 0;
      }
      await new Promise<void>((resolve) => {
        const wake = () => {
          signal.removeEventListener("abort", wake);
          resolve();
        };
        this.waiters.push(wake);
        signal.addEventListener("abort", wake, { once: true });
      });
    }
    if (signal.aborted) {
      return 0;
    }
    const free = this.capacity - this.used;
    const share = Math.min(Math.ceil(free / Math.max(this.pollers - this.polling, 1)), MAX_TASKS_PER_POLL);
    this.used += share;
    this.polling++;
    return share;
  }

  /** A poll answered with started tasks: they keep their slots, the rest are freed. */
  settlePoll(reserved: number, started: number): void {
    this.polling--;
    this.used += started - reserved;
    this.wake();
  }

  /** A task is over. */
  finish(): void {
    this.used--;
    this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) {
      wake();
    }
  }
}

/** Exponential backoff with equal jitter: the nth delay is in [step/2, step]. */
export class Backoff {
  private step = 0;

  constructor(
    readonly initialMs: number,
    readonly maxMs: number,
    private readonly random: () => number = Math.random,
  ) {}

  reset(): void {
    this.step = 0;
  }

  next(): number {
    this.step = this.step === 0 ? this.initialMs : Math.min(this.step * 2, this.maxMs);
    return this.step / 2 + this.random() * (this.step / 2);
  }
}

/**
 * Failures that another try may cure: the server is unreachable, restarting or
 * overloaded. Codes that a Statewright server sends with an ErrorInfo reason for its own
 * logic (ABORTED, RESOURCE_EXHAUSTED) are final when they carry one, except a
 * RESOURCE_EXHAUSTED with a RetryInfo (RATE_LIMITED), which says when to come back.
 */
function transient(error: ConnectError): boolean {
  switch (error.code) {
    case Code.Unavailable:
    case Code.DeadlineExceeded:
      return true;
    case Code.ResourceExhausted:
      return errorReason(error) === undefined || retryDelayMs(error) !== undefined;
    case Code.Unknown:
      // OUTCOME_UNKNOWN: the server lost the answer of its own commit; the same request id
      // is answered with what became of it.
      return errorReason(error) === undefined || errorReason(error) === "OUTCOME_UNKNOWN";
    case Code.Canceled:
    case Code.Internal:
    case Code.Aborted:
      return errorReason(error) === undefined;
    default:
      return false;
  }
}

/**
 * How long to wait before trying again after error: the backoff's next delay, but never
 * less than the server's RetryInfo asks for, so that a rate-limited worker comes back when
 * its bucket has room and slows down further while it stays limited.
 */
function retryDelay(error: ConnectError, backoff: Backoff): number {
  return Math.max(backoff.next(), retryDelayMs(error) ?? 0);
}

/** Why the server no longer wants to hear about this attempt, or undefined. */
function dropReason(error: ConnectError): { kind: TaskAbortKind; why: string } | undefined {
  const reason = errorReason(error);
  if (error.code === Code.FailedPrecondition && reason === "LEASE_SUPERSEDED") {
    return { kind: "LEASE_LOST", why: "its lease is no longer current" };
  }
  if (error.code === Code.FailedPrecondition && reason === "TASK_CANCELLED") {
    return { kind: "CANCEL_REQUESTED", why: "the task was cancelled" };
  }
  if (error.code === Code.NotFound) {
    return { kind: "LEASE_LOST", why: "the task no longer exists" };
  }
  return undefined;
}

/** The type of a failure from an error that is not a TaskFailure: its name, or its class. */
export function errorType(err: unknown): string {
  if (err instanceof Error) {
    if (err.name && err.name !== "Error") {
      return err.name;
    }
    const constructorName: unknown = err.constructor?.name;
    return typeof constructorName === "string" && constructorName !== "" ? constructorName : "Error";
  }
  return "Error";
}

function workerTask(task: Task): WorkerTask {
  return {
    name: task.name,
    workflow: task.workflow,
    state: task.state,
    queue: task.queue,
    input: task.input ?? {},
    attempt: task.attempt,
    heartbeatDetails: task.heartbeatDetails,
    lastError: task.lastError,
    deadline: task.deadline ? new Date(timestampMs(task.deadline)) : undefined,
    itemIndex: task.itemIndex,
    traceparent: task.traceparent,
    tracestate: task.tracestate,
  };
}

/** Throws a TypeError unless value is a plain object of JSON values (what a Struct holds). */
function assertJsonObject(value: unknown, what: string): asserts value is JsonObject {
  const problem = jsonProblem(value, "", new Set());
  if (problem !== undefined) {
    throw new TypeError(`${what} is not a JSON object: ${problem}`);
  }
  if (Array.isArray(value) || typeof value !== "object" || value === null) {
    throw new TypeError(`${what} is not a JSON object: it is ${Array.isArray(value) ? "an array" : typeof value}`);
  }
}

function jsonProblem(value: unknown, path: string, seen: Set<object>): string | undefined {
  const at = path === "" ? "" : ` at ${path}`;
  switch (typeof value) {
    case "string":
    case "boolean":
      return undefined;
    case "number":
      return Number.isFinite(value) ? undefined : `${value}${at}`;
    case "object": {
      if (value === null) {
        return undefined;
      }
      if (seen.has(value)) {
        return `a cycle${at}`;
      }
      seen.add(value);
      let problem: string | undefined;
      if (Array.isArray(value)) {
        value.some((item: unknown, i) => (problem = jsonProblem(item, `${path}[${i}]`, seen)) !== undefined);
      } else {
        const proto: unknown = Object.getPrototypeOf(value);
        if (proto !== Object.prototype && proto !== null) {
          problem = `a ${value.constructor?.name ?? "non-plain object"}${at}`;
        } else {
          Object.entries(value).some(([k, v]) => (problem = jsonProblem(v, path === "" ? k : `${path}.${k}`, seen)) !== undefined);
        }
      }
      seen.delete(value);
      return problem;
    }
    default:
      return `${typeof value}${at}`;
  }
}

function duration(ms: number): MessageInitShape<typeof DurationSchema> {
  const whole = Math.floor(ms);
  return { seconds: BigInt(Math.floor(whole / 1000)), nanos: (whole % 1000) * 1_000_000 };
}

function describe(err: unknown): string {
  if (err instanceof ConnectError) {
    const reason = errorReason(err);
    return reason === undefined ? err.message : `${err.message} (${reason})`;
  }
  return err instanceof Error ? err.message : String(err);
}

/** Waits ms milliseconds, or less when signal aborts (no rejection: callers check it). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

function positiveInteger(n: number, what: string): number {
  if (!Number.isInteger(n) || n < 1) {
    throw new RangeError(`Worker: ${what} must be a positive integer, not ${n}`);
  }
  return n;
}

function nonNegative(n: number, what: string): number {
  if (!(Number.isFinite(n) && n >= 0)) {
    throw new RangeError(`Worker: ${what} must be a finite number >= 0, not ${n}`);
  }
  return n;
}
