import assert from "node:assert/strict";
import { test } from "node:test";

import { TaskStatus, WorkflowStatus, parseTaskStatus, parseWorkflowStatus } from "../src/index.js";

test("a workflow status reads from either spelling, in any case", () => {
  for (const text of ["WAITING", "waiting", " Waiting ", "WORKFLOW_STATUS_WAITING", "workflow_status_waiting"]) {
    assert.equal(parseWorkflowStatus(text), WorkflowStatus.WAITING, text);
  }
  assert.throws(() => parseWorkflowStatus("sleeping"), {
    name: "RangeError",
    message: /one of RUNNING, WAITING, COMPLETED, FAILED, CANCELLED/,
  });
  assert.throws(() => parseWorkflowStatus("WORKFLOW_STATUS_WORKFLOW_STATUS_WAITING"), RangeError);
  assert.throws(() => parseWorkflowStatus("toString"), RangeError);
});

test("a task status reads from either spelling", () => {
  assert.equal(parseTaskStatus("TASK_STATUS_TIMED_OUT"), TaskStatus.TIMED_OUT);
  assert.equal(parseTaskStatus("timed_out"), TaskStatus.TIMED_OUT);
  assert.throws(() => parseTaskStatus("DONE"), { message: /is not a task status/ });
});
