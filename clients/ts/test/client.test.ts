// The client over a real HTTP/2 gRPC connection to an in-process server.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Code, ConnectError } from "@connectrpc/connect";

import {
  WatchEventType,
  WorkflowStatus,
  createStatewrightClient,
  errorInfo,
  workflowName,
  type WorkflowServiceClient,
} from "../src/index.js";
import { fakeWorkflowService, serve, statewrightError, type Served } from "./fake_server.js";

let served: Served;
let client: WorkflowServiceClient;
let getAttempts = 0;
let unavailableLeft = 0;
const seenTimeouts = new Map<string, number | undefined>();

before(async () => {
  const fake = fakeWorkflowService();
  served = await serve({
    ...fake,
    getWorkflow(req, ctx) {
      getAttempts++;
      seenTimeouts.set("GetWorkflow", ctx.timeoutMs());
      if (unavailableLeft > 0) {
        unavailableLeft--;
        throw statewrightError(Code.Unavailable, "STORE_ERROR");
      }
      return { workflow: { name: req.name, revision: 7n } };
    },
    startWorkflow(req, ctx) {
      seenTimeouts.set("StartWorkflow", ctx.timeoutMs());
      return fake.startWorkflow!(req, ctx);
    },
  });
  client = createStatewrightClient(served.target);
});

after(() => served.close());

test("start and resume; a stale expected_revision fails with REVISION_MISMATCH in ErrorInfo", async () => {
  const started = await client.startWorkflow({ definition: "mail-approval", workflowId: "m1", input: { topic: "t" } });
  assert.equal(started.workflow?.status, WorkflowStatus.WAITING);
  assert.equal(started.workflow?.revision, 1n);

  const stale = await client.resumeWorkflow({ name: workflowName("m1"), event: "approve", expectedRevision: 99n }).then(
    () => assert.fail("a stale resume succeeded"),
    (err: unknown) => err,
  );
  assert.ok(stale instanceof ConnectError);
  assert.equal(stale.code, Code.Aborted);
  const info = errorInfo(stale);
  assert.equal(info?.reason, "REVISION_MISMATCH");
  assert.equal(info?.domain, "statewright.dev");
  assert.equal(info?.metadata["actual_revision"], "1");

  const resumed = await client.resumeWorkflow({ name: workflowName("m1"), event: "approve", expectedRevision: 1n });
  assert.equal(resumed.workflow?.status, WorkflowStatus.COMPLETED);
  assert.equal(resumed.workflow?.revision, 2n);
});

test("UNAVAILABLE is retried over the wire", async () => {
  getAttempts = 0;
  unavailableLeft = 2;
  const res = await client.getWorkflow({ name: "workflows/x" });
  assert.equal(res.workflow?.revision, 7n);
  assert.equal(getAttempts, 3);
});

test("the service config's timeouts reach the server as grpc-timeout", async () => {
  await client.getWorkflow({ name: "workflows/x" });
  await client.startWorkflow({ definition: "order-pricing", workflowId: "o-timeout" });
  const get = seenTimeouts.get("GetWorkflow");
  const start = seenTimeouts.get("StartWorkflow");
  assert.ok(get !== undefined && get > 8_000 && get <= 10_000, `GetWorkflow timeout ${get}`);
  assert.ok(start !== undefined && start > 28_000 && start <= 30_000, `StartWorkflow timeout ${start}`);
  await client.getWorkflow({ name: "workflows/x" }, { timeoutMs: 1_000 });
  assert.ok((seenTimeouts.get("GetWorkflow") ?? Infinity) <= 1_000, "the caller's shorter timeout wins");
});

test("a watch streams CURRENT, then each step, and ends after the terminal revision", async () => {
  await client.startWorkflow({ definition: "mail-approval", workflowId: "m2" });
  const messages = [];
  for await (const m of client.watchWorkflow({ name: "workflows/m2" })) {
    messages.push(m);
    if (m.type === WatchEventType.CURRENT) {
      await client.resumeWorkflow({ name: "workflows/m2", event: "approve" });
    }
  }
  assert.deepEqual(
    messages.map((m) => [WatchEventType[m.type], m.revision, WorkflowStatus[m.workflow?.status ?? 0]]),
    [
      ["CURRENT", 1n, "WAITING"],
      ["STEP", 2n, "COMPLETED"],
    ],
  );
});

test("NOT_FOUND carries its ErrorInfo and is not retried", async () => {
  const err = await client.resumeWorkflow({ name: "workflows/none" }).catch((e: unknown) => e);
  assert.equal(ConnectError.from(err).code, Code.NotFound);
  assert.equal(errorInfo(err)?.reason, "WORKFLOW_NOT_FOUND");
});
