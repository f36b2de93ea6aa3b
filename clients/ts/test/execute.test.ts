// client.execute() over a real HTTP/2 gRPC connection to the in-process fake: a start that
// rests at once, a wait that ends in a finish, and a timeout that leaves the instance going.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import {
  Code,
  ConnectError,
  ExecutionTimedOutError,
  WorkflowStatus,
  createStatewrightClient,
  type StartWorkflowRequest,
  type StatewrightClient,
} from "../src/index.js";
import { fakeWorkflowService, serve, type Served } from "./fake_server.js";

let served: Served;
let client: StatewrightClient;
const starts: StartWorkflowRequest[] = [];
const limit = { timeout: 5_000 };

before(async () => {
  const fake = fakeWorkflowService();
  served = await serve({
    ...fake,
    startWorkflow(req, ctx) {
      starts.push(req);
      return fake.startWorkflow!(req, ctx);
    },
  });
  client = createStatewrightClient(served.target);
});

after(() => served.close());

test("execute returns a waiting instance at once, with a request id on the start", limit, async () => {
  const wf = await client.execute({ definition: "mail-approval", workflowId: "x1" });
  assert.equal(wf.status, WorkflowStatus.WAITING);
  assert.equal(wf.state, "awaiting_approval");
  assert.ok(starts.at(-1)?.requestId, "the start carries a request id");
});

test("until finish follows the instance past its wait to the finish", limit, async () => {
  setTimeout(() => void client.resumeWorkflow({ name: "workflows/x2", event: "approve" }), 100);
  const wf = await client.execute({ definition: "mail-approval", workflowId: "x2" }, { until: "finish" });
  assert.equal(wf.status, WorkflowStatus.COMPLETED);
  assert.equal(wf.revision, 2n);
});

test("a timeout throws ExecutionTimedOutError with the instance, which goes on", limit, async () => {
  await assert.rejects(
    client.execute({ definition: "review-loop", workflowId: "x3" }, { timeoutMs: 200 }),
    (err: unknown) => {
      assert.ok(err instanceof ExecutionTimedOutError, String(err));
      assert.ok(err instanceof ConnectError, "still a ConnectError");
      assert.equal(err.code, Code.DeadlineExceeded);
      assert.equal(err.workflow.status, WorkflowStatus.RUNNING);
      assert.equal(err.workflow.name, "workflows/x3");
      return true;
    },
  );
  const now = await client.getWorkflow({ name: "workflows/x3" });
  assert.equal(now.workflow?.status, WorkflowStatus.RUNNING);
});

test("a bad until is refused before anything starts", limit, async () => {
  const before = starts.length;
  await assert.rejects(
    client.execute({ definition: "mail-approval", workflowId: "x4" }, { until: "later" as "rest" }),
    TypeError,
  );
  assert.equal(starts.length, before);
});
