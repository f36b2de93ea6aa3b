// Statuses read from text in either spelling: the short form the CLI and this client print
// (`WAITING`, `WorkflowStatus[status]`) or the proto's name (`WORKFLOW_STATUS_WAITING`, as
// Go, Java, grpcurl and protobuf JSON spell it), in any case.
import { TaskStatus } from "./gen/statewright/v1/task_pb.js";
import { WorkflowStatus } from "./gen/statewright/v1/workflow_pb.js";

function parseEnum<E extends number>(
  values: Record<string, string | number>,
  prefix: string,
  what: string,
  text: string,
): E {
  const name = text.trim().toUpperCase();
  const short = name.startsWith(prefix) ? name.slice(prefix.length) : name;
  const found = values[short];
  if (typeof found === "number") {
    return found as E;
  }
  const choices = Object.keys(values).filter(
    (key) => typeof values[key] === "number" && key !== "UNSPECIFIED",
  );
  throw new RangeError(
    `${JSON.stringify(text)} is not a ${what}: one of ${choices.join(", ")} ` +
      `(any case, with or without the ${prefix} prefix)`,
  );
}

/** `WorkflowStatus.WAITING` for "WAITING", "waiting" or "WORKFLOW_STATUS_WAITING"; a RangeError otherwise. */
export function parseWorkflowStatus(text: string): WorkflowStatus {
  return parseEnum<WorkflowStatus>(WorkflowStatus, "WORKFLOW_STATUS_", "workflow status", text);
}

/** `TaskStatus.LEASED` for "LEASED", "leased" or "TASK_STATUS_LEASED"; a RangeError otherwise. */
export function parseTaskStatus(text: string): TaskStatus {
  return parseEnum<TaskStatus>(TaskStatus, "TASK_STATUS_", "task status", text);
}
