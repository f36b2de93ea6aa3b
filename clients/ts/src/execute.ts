import { randomUUID } from "node:crypto";

import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type Client } from "@connectrpc/connect";

import { WorkflowStatus, type Workflow } from "./gen/statewright/v1/workflow_pb.js";
import type { StartWorkflowRequestSchema, WorkflowService } from "./gen/statewright/v1/workflow_service_pb.js";
import { watch } from "./watch.js";

export interface ExecuteOptions {
  /**
   * "rest" (the default): return once the instance is WAITING, COMPLETED, FAILED or
   * CANCELLED. "finish": only once it is COMPLETED, FAILED or CANCELLED.
   */
  until?: "rest" | "finish";
  /** Bounds the whole call; then ExecutionTimedOutError is thrown and the instance goes on. */
  timeoutMs?: number;
  /** Ends the call early (a Canceled ConnectError); the instance goes on. */
  signal?: AbortSignal;
}

/**
 * execute()'s timeout passed before the instance rested or finished. The instance was
 * started and goes on running; workflow is it as last seen. A ConnectError with code
 * DeadlineExceeded, so code checks read it as any deadline.
 */
export class ExecutionTimedOutError extends ConnectError {
  // ConnectError's own instanceof check (inherited as a static) looks at the prototype and
  // the name: its name stays "ConnectError" so that ConnectError.from and instanceof
  // ConnectError take it as one, and this class checks its own prototype.
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === "object" && value !== null && Object.prototype.isPrototypeOf.call(ExecutionTimedOutError.prototype, value);
  }

  constructor(readonly workflow: Workflow, until: "rest" | "finish", timeoutMs: number) {
    super(
      `${workflow.name} did not ${until} within ${timeoutMs} ms; it is ${WorkflowStatus[workflow.status]} ` +
        `in "${workflow.state}" and goes on running`,
      Code.DeadlineExceeded,
    );
  }
}

const FINISHED: ReadonlySet<WorkflowStatus> = new Set([
  WorkflowStatus.COMPLETED,
  WorkflowStatus.FAILED,
  WorkflowStatus.CANCELLED,
]);

function arrived(workflow: Workflow | undefined, until: "rest" | "finish"): boolean {
  if (workflow === undefined) return false;
  return FINISHED.has(workflow.status) || (until === "rest" && workflow.status === WorkflowStatus.WAITING);
}

/**
 * Starts an instance and resolves with it once it rests (WAITING, or finished), or with
 * until: "finish" once it finished. It follows the instance with watch(), so it does not
 * poll. A FAILED instance resolves like any other (its error says why). The start carries
 * a request id (one is made when the request has none), so a retried start never makes a
 * second instance.
 */
export async function execute(
  client: Client<typeof WorkflowService>,
  request: MessageInitShape<typeof StartWorkflowRequestSchema>,
  options: ExecuteOptions = {},
): Promise<Workflow> {
  const until = options.until ?? "rest";
  if (until !== "rest" && until !== "finish") {
    throw new TypeError(`until must be "rest" or "finish", not ${JSON.stringify(until)}`);
  }
  const { timeoutMs } = options;
  const deadline = new AbortController();
  const onAbort = () => deadline.abort(options.signal?.reason);
  options.signal?.addEventListener("abort", onAbort, { once: true });
  let timedOut = false;
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          deadline.abort(new ConnectError("execute timed out", Code.DeadlineExceeded));
        }, timeoutMs);
  let latest: Workflow | undefined;
  try {
    const started = await client.startWorkflow(
      { ...request, requestId: request.requestId || randomUUID() },
      { signal: deadline.signal },
    );
    latest = started.workflow;
    if (latest === undefined || arrived(latest, until)) {
      return latest as Workflow;
    }
    for await (const message of watch(client, latest.name, { afterRevision: latest.revision, signal: deadline.signal })) {
      latest = message.workflow ?? latest;
      if (arrived(latest, until)) {
        return latest as Workflow;
      }
    }
  } catch (err) {
    if (!timedOut || latest === undefined) {
      throw err;
    }
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onAbort);
  }
  // The timeout passed, or the watch ended at a terminal revision it had already replayed:
  // read where the instance stands now.
  const seen = latest as Workflow;
  const current = (await client.getWorkflow({ name: seen.name }, { signal: options.signal })).workflow ?? seen;
  if (arrived(current, until)) {
    return current;
  }
  throw new ExecutionTimedOutError(current, until, timeoutMs ?? 0);
}
