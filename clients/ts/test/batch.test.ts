// The batch helpers over a real HTTP/2 gRPC connection to an in-process BatchService.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";

import {
  BatchOperationSchema,
  BatchState,
  batchFinished,
  batchName,
  createStatewrightClient,
  errorReason,
  type BatchOperation,
  type StartBatchOperationRequest,
  type StatewrightClient,
} from "../src/index.js";
import { fakeWorkflowService, serve, statewrightError, type Served } from "./fake_server.js";

let served: Served;
let client: StatewrightClient;
const starts: StartBatchOperationRequest[] = [];
let progress: BatchOperation[] = [];
let reads = 0;

const batch = (state: BatchState, done: bigint, failed = 0n): BatchOperation =>
  create(BatchOperationSchema, { name: "batches/b1", state, matched: 4n, done, failed });

before(async () => {
  served = await serve(fakeWorkflowService(), undefined, {
    batches: {
      startBatchOperation(req) {
        starts.push(req);
        const name = req.dryRun ? "" : batchName(req.batchId);
        return {
          batch: { name, reason: req.reason, matched: 2n, operation: { case: "retry", value: {} } },
          sample: ["workflows/a"],
        };
      },
      getBatchOperation(req) {
        if (req.name !== "batches/b1") throw statewrightError(Code.NotFound, "BATCH_NOT_FOUND");
        const answer = progress[Math.min(reads, progress.length - 1)];
        reads++;
        return { batch: answer };
      },
      cancelBatchOperation() {
        throw statewrightError(Code.FailedPrecondition, "BATCH_FINISHED");
      },
      listBatchOperations(req) {
        return { batches: [batch(req.state, 4n)], nextPageToken: "" };
      },
    },
  });
  client = createStatewrightClient(served.target);
});

after(() => served.close());

test("startBatchOperation makes a batch id only when none is given and it is no dry run", async () => {
  const request = { filter: "status = FAILED", idPrefix: "order-", reason: "bank is back", operation: { case: "retry" as const, value: {} } };
  const made = await client.startBatchOperation(request);
  const given = await client.startBatchOperation({ ...request, batchId: "b-7" });
  const dry = await client.startBatchOperation({ ...request, dryRun: true });
  assert.equal(starts.length, 3);
  assert.match(starts[0]!.batchId, /^[0-9a-f-]{36}$/);
  assert.equal(made.batch?.name, `batches/${starts[0]!.batchId}`);
  assert.equal(starts[0]!.operation.case, "retry");
  assert.equal(starts[0]!.filter, "status = FAILED");
  assert.equal(starts[0]!.idPrefix, "order-");
  assert.equal(given.batch?.name, "batches/b-7");
  assert.equal(starts[2]!.batchId, "");
  assert.equal(dry.batch?.name, "");
  assert.deepEqual(dry.sample, ["workflows/a"]);
  assert.equal((request as { batchId?: string }).batchId, undefined, "the caller's request was changed");
});

test("waitBatchOperation reports each change and resolves with the batch as it ended", async () => {
  progress = [
    batch(BatchState.RUNNING, 1n),
    batch(BatchState.RUNNING, 1n),
    batch(BatchState.RUNNING, 3n),
    batch(BatchState.COMPLETED, 3n, 1n),
  ];
  reads = 0;
  const seen: string[] = [];
  const ended = await client.waitBatchOperation("b1", {
    intervalMs: 1,
    onProgress: (b) => seen.push(`${BatchState[b.state]} ${b.done}/${b.failed}`),
  });
  assert.deepEqual(seen, ["RUNNING 1/0", "RUNNING 3/0", "COMPLETED 3/1"]);
  assert.ok(batchFinished(ended));
  assert.equal(reads, 4);
  await assert.rejects(client.waitBatchOperation("b1", { intervalMs: 0 }), RangeError);
});

test("a wait stops when its signal aborts; refusals are ConnectErrors with the reason", async () => {
  progress = [batch(BatchState.RUNNING, 0n)];
  const stop = new AbortController();
  const waiting = client.waitBatchOperation("batches/b1", {
    intervalMs: 60_000,
    signal: stop.signal,
    onProgress: () => stop.abort(),
  });
  await assert.rejects(waiting, (err: unknown) => err instanceof Error && err.name === "AbortError");
  const missing = await client.waitBatchOperation("other").catch((err: unknown) => err);
  assert.ok(missing instanceof ConnectError && missing.code === Code.NotFound);
  const finished = await client.cancelBatchOperation({ name: "batches/b1", reason: "late" }).catch((err: unknown) => err);
  assert.equal(errorReason(finished), "BATCH_FINISHED");
  const { batches } = await client.listBatchOperations({ state: BatchState.COMPLETED });
  assert.deepEqual(
    batches.map((b) => [b.name, BatchState[b.state]]),
    [["batches/b1", "COMPLETED"]],
  );
});
