import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type Client } from "@connectrpc/connect";

import { workflowName } from "./client.js";
import { errorReason, retryDelayMs } from "./error_info.js";
import { WorkflowStatus, type Workflow } from "./gen/statewright/v1/workflow_pb.js";
import type {
  WatchWorkflowRequestSchema,
  WatchWorkflowResponse,
  WorkflowService,
} from "./gen/statewright/v1/workflow_service_pb.js";

export interface WatchOptions {
  /**
   * Replay every revision after this one first; without it the first message is CURRENT
   * (the instance now).
   */
  afterRevision?: bigint | number;
  /** A deadline for each stream; by default none, since a watch lasts as long as the instance. */
  timeoutMs?: number;
  /** How long reconnects may go on without a new revision before the watch gives up (30 s). */
  reconnectBudgetMs?: number;
  /** The first reconnect delay (100 ms); it doubles, with jitter, up to maxBackoffMs. */
  initialBackoffMs?: number;
  /** The longest reconnect delay (2 s). */
  maxBackoffMs?: number;
  /** Ends the watch: the stream is cancelled and the generator throws a Canceled ConnectError. */
  signal?: AbortSignal;
}

const TERMINAL: ReadonlySet<WorkflowStatus> = new Set([
  WorkflowStatus.COMPLETED,
  WorkflowStatus.FAILED,
  WorkflowStatus.CANCELLED,
]);

const isTerminal = (workflow: Workflow | undefined): boolean =>
  workflow !== undefined && TERMINAL.has(workflow.status);

// Transport-level failures of a watch stream that a reconnect can cure. A status carrying
// an ErrorInfo reason came from the server's own logic and is final, except UNAVAILABLE
// (SHUTTING_DOWN from a draining replica: another one, or the restarted one, will serve
// the resumed watch) and RESOURCE_EXHAUSTED with a RetryInfo (RATE_LIMITED: the reconnect
// waits at least as long as it asks).
const RESUMABLE: ReadonlySet<Code> = new Set([Code.Unavailable, Code.Canceled, Code.Internal, Code.Unknown]);

function resumable(err: ConnectError): boolean {
  if (err.code === Code.ResourceExhausted) {
    return retryDelayMs(err) !== undefined;
  }
  return err.code === Code.Unavailable || (RESUMABLE.has(err.code) && !errorReason(err));
}

/**
 * Exponential backoff with jitter, bounded by a time budget since the last progress.
 * Mirrors the service config's policy (0.1 s doubling to 2 s) for the one thing the
 * transport's retries cannot do: resume a stream that already delivered messages.
 */
class Backoff {
  private next = 0;
  private since: number | undefined;

  constructor(
    private readonly initialMs: number,
    private readonly maxMs: number,
    private readonly budgetMs: number,
  ) {}

  reset(): void {
    this.next = 0;
    this.since = undefined;
  }

  /** Milliseconds to wait before the next attempt, or undefined when the budget is spent. */
  delay(): number | undefined {
    const now = performance.now();
    this.since ??= now;
    if (now - this.since >= this.budgetMs) {
      return undefined;
    }
    this.next = this.next === 0 ? this.initialMs : Math.min(this.next * 2, this.maxMs);
    // Equal jitter: never less than half the step, so a restarting server is not hammered.
    return this.next / 2 + Math.random() * (this.next / 2);
  }
}

/**
 * Where a watch stands. The server replays history after after_revision, so resuming from
 * the last revision handed over delivers every later revision exactly once; revisions at
 * or below it (a replica may replay overlapping history) are dropped.
 */
class WatchCursor {
  done = false;

  constructor(
    readonly name: string,
    private afterRevision: bigint | undefined,
  ) {}

  request(): MessageInitShape<typeof WatchWorkflowRequestSchema> {
    return this.afterRevision === undefined ? { name: this.name } : { name: this.name, afterRevision: this.afterRevision };
  }

  /** Whether message is new; if so it becomes the position to resume after. */
  accept(message: WatchWorkflowResponse): boolean {
    if (this.afterRevision !== undefined && message.revision <= this.afterRevision) {
      return false;
    }
    this.afterRevision = message.revision;
    this.done = isTerminal(message.workflow);
    return true;
  }

  /**
   * After a stream ended OK with no terminal revision: true when the instance is terminal
   * at a revision already seen (for example a watch opened at or past the end).
   */
  finishedQuietly(current: Workflow | undefined): boolean {
    const seen = this.afterRevision ?? -1n;
    return current !== undefined && isTerminal(current) && current.revision <= seen;
  }
}

function resourceName(nameOrId: string): string {
  return nameOrId.startsWith("workflows/") ? nameOrId : workflowName(nameOrId);
}

function cancelled(signal: AbortSignal): ConnectError {
  return ConnectError.from(signal.reason, Code.Canceled);
}

/** Waits ms milliseconds, or throws as soon as signal aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(cancelled(signal));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(cancelled(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Yields every revision of an instance in order, and returns after a terminal one.
 *
 * name is a workflow id or a `workflows/{id}` resource name. Without afterRevision the
 * first message is CURRENT (the instance now), then one STEP per new revision; with it,
 * every revision after it is replayed first. If the connection drops or the server
 * restarts, the watch resumes after the last revision it yielded, so each revision is seen
 * exactly once; it gives up, throwing the last error, after reconnectBudgetMs without
 * progress. A RATE_LIMITED refusal is waited out the same way, for at least the delay its
 * RetryInfo asks. Other errors (NOT_FOUND, any error with an ErrorInfo reason) are thrown at
 * once as the call's ConnectError. Breaking out of the loop cancels the stream.
 */
export async function* watch(
  client: Client<typeof WorkflowService>,
  name: string,
  options: WatchOptions = {},
): AsyncGenerator<WatchWorkflowResponse, void, undefined> {
  const { signal, timeoutMs } = options;
  const after = options.afterRevision === undefined ? undefined : BigInt(options.afterRevision);
  const cursor = new WatchCursor(resourceName(name), after);
  const backoff = new Backoff(
    options.initialBackoffMs ?? 100,
    options.maxBackoffMs ?? 2_000,
    options.reconnectBudgetMs ?? 30_000,
  );
  for (;;) {
    if (signal?.aborted) {
      throw cancelled(signal);
    }
    let failure: ConnectError | undefined;
    // A stream of its own, so that leaving the loop early (break, return, throw in the
    // consumer) cancels the call instead of leaving it open until the instance ends.
    const stream = new AbortController();
    const onAbort = () => stream.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    const messages = client.watchWorkflow(cursor.request(), { signal: stream.signal, timeoutMs })[Symbol.asyncIterator]();
    try {
      for (;;) {
        // Only the stream's own failures are caught: an error the consumer throws into
        // the generator at the yield must not look like a dropped connection.
        let next: IteratorResult<WatchWorkflowResponse>;
        try {
          next = await messages.next();
        } catch (err) {
          if (signal?.aborted) {
            throw cancelled(signal);
          }
          failure = ConnectError.from(err);
          if (!resumable(failure)) {
            throw failure;
          }
          break;
        }
        if (next.done) {
          break;
        }
        if (!cursor.accept(next.value)) {
          continue;
        }
        backoff.reset();
        yield next.value;
        if (cursor.done) {
          return;
        }
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
      stream.abort();
    }
    if (failure === undefined) {
      // The server ends a stream OK after a terminal revision, so an OK end without one
      // means either nothing was left to send or the server went away cleanly.
      let current: Workflow | undefined;
      try {
        current = (await client.getWorkflow({ name: cursor.name }, { signal })).workflow;
      } catch (err) {
        throw signal?.aborted ? cancelled(signal) : err;
      }
      if (cursor.finishedQuietly(current)) {
        return;
      }
    }
    const delay = backoff.delay();
    if (delay === undefined) {
      throw failure ?? new ConnectError(`watch of ${cursor.name} kept ending before a terminal revision`, Code.Unavailable);
    }
    await sleep(Math.max(delay, retryDelayMs(failure) ?? 0), signal);
  }
}
