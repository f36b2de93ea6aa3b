// client.watch() over a real HTTP/2 gRPC connection to the in-process fake, with the fake's
// WatchWorkflow scripted per test to drop, replay or end streams.
import assert from "node:assert/strict";
import { once } from "node:events";
import { after, afterEach, before, test } from "node:test";

import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";

import {
  WatchEventType,
  createStatewrightClient,
  errorInfo,
  type StatewrightClient,
  type WatchOptions,
  type WatchWorkflowRequest,
  type WatchWorkflowResponse,
} from "../src/index.js";
import { fakeWorkflowService, rateLimited, serve, statewrightError, type Served, type WorkflowServiceImpl } from "./fake_server.js";

type WatchImpl = NonNullable<WorkflowServiceImpl["watchWorkflow"]>;

let served: Served;
let client: StatewrightClient;
let fakeWatch: WatchImpl;
/** Replaces the fake's WatchWorkflow for one test; attempt counts from 1. */
let script: ((req: WatchWorkflowRequest, ctx: HandlerContext, attempt: number) => ReturnType<WatchImpl>) | undefined;
let watchRequests: WatchWorkflowRequest[] = [];
let watchSignals: AbortSignal[] = [];
let getCalls = 0;

// Small enough that a test that backs off still takes milliseconds.
const fast: WatchOptions = { initialBackoffMs: 1, maxBackoffMs: 4 };
// A watch that fails to stop would otherwise hang the run.
const limit = { timeout: 5_000 };

before(async () => {
  const fake = fakeWorkflowService();
  fakeWatch = fake.watchWorkflow!;
  served = await serve({
    ...fake,
    watchWorkflow(req, ctx) {
      watchRequests.push(req);
      watchSignals.push(ctx.signal);
      return script ? script(req, ctx, watchRequests.length) : fakeWatch(req, ctx);
    },
    getWorkflow(req, ctx) {
      getCalls++;
      return fake.getWorkflow!(req, ctx);
    },
  });
  client = createStatewrightClient(served.target);
});

afterEach(() => {
  script = undefined;
  watchRequests = [];
  watchSignals = [];
  getCalls = 0;
});

after(() => served.close());

const revisions = (messages: WatchWorkflowResponse[]) =>
  messages.map((m) => `${WatchEventType[m.type]} ${m.revision}`);

async function collect(watch: AsyncIterable<WatchWorkflowResponse>): Promise<WatchWorkflowResponse[]> {
  const messages: WatchWorkflowResponse[] = [];
  for await (const m of watch) messages.push(m);
  return messages;
}

/** Runs a watch to its end; what it yielded and what it threw. */
async function outcome(watch: AsyncIterable<WatchWorkflowResponse>) {
  const messages: WatchWorkflowResponse[] = [];
  try {
    for await (const m of watch) messages.push(m);
  } catch (err) {
    return { messages, err: ConnectError.from(err) };
  }
  return { messages, err: undefined };
}

/** A review-loop instance at revision 4, COMPLETED, by way of two RUNNING revisions. */
async function completedReviewLoop(id: string): Promise<void> {
  await client.startWorkflow({ definition: "review-loop", workflowId: id });
  await client.signalWorkflow({ name: `workflows/${id}`, event: "score", payload: { score: 0.5 } });
  await client.signalWorkflow({ name: `workflows/${id}`, event: "revised" });
  await client.signalWorkflow({ name: `workflows/${id}`, event: "score", payload: { score: 0.9 } });
}

test("watch yields CURRENT, then each step, and returns after the terminal revision", limit, async () => {
  await client.startWorkflow({ definition: "review-loop", workflowId: "a" });
  const next: [string, Record<string, number>?][] = [["score", { score: 0.5 }], ["revised"], ["score", { score: 0.9 }]];
  const messages: WatchWorkflowResponse[] = [];
  for await (const m of client.watch("a")) {
    messages.push(m);
    const step = next.shift();
    if (step) await client.signalWorkflow({ name: "workflows/a", event: step[0], payload: step[1] });
  }
  assert.deepEqual(revisions(messages), ["CURRENT 1", "STEP 2", "STEP 3", "STEP 4"]);
  assert.equal(watchRequests.length, 1);
  assert.equal(watchRequests[0]?.name, "workflows/a");
  assert.equal(watchRequests[0]?.afterRevision, undefined);
  assert.equal(getCalls, 0, "a stream that reached the terminal revision needs no GetWorkflow");
});

test("after UNAVAILABLE mid-stream, watch resumes after the last revision and drops the replayed overlap", limit, async () => {
  await completedReviewLoop("b");
  script = async function* (req, ctx, attempt) {
    if (attempt === 1) {
      let sent = 0;
      for await (const m of fakeWatch(req, ctx)) {
        yield m;
        if (++sent === 2) throw new ConnectError("connection reset", Code.Unavailable);
      }
      return;
    }
    // A replica that replays one revision too many.
    yield* fakeWatch({ ...req, afterRevision: (req.afterRevision ?? 1n) - 1n }, ctx);
  };
  const messages = await collect(client.watch("workflows/b", { ...fast, afterRevision: 0n }));
  assert.deepEqual(revisions(messages), ["STEP 1", "STEP 2", "STEP 3", "STEP 4"]);
  assert.deepEqual(
    watchRequests.map((r) => r.afterRevision),
    [0n, 2n],
  );
});

test("SHUTTING_DOWN, and CANCELLED, INTERNAL or UNKNOWN without an ErrorInfo reason, are resumed too", limit, async () => {
  await completedReviewLoop("b2");
  // A draining replica says why it is UNAVAILABLE; the other codes come from the transport.
  const drops = [
    statewrightError(Code.Unavailable, "SHUTTING_DOWN"),
    new ConnectError("dropped", Code.Canceled),
    new ConnectError("dropped", Code.Internal),
    new ConnectError("dropped", Code.Unknown),
  ];
  script = async function* (req, ctx, attempt) {
    const drop = drops[attempt - 1];
    if (attempt > 1 && drop) throw drop;
    for await (const m of fakeWatch(req, ctx)) {
      yield m;
      if (drop) throw drop;
    }
  };
  const messages = await collect(client.watch("b2", { ...fast, afterRevision: 0n }));
  assert.deepEqual(revisions(messages), ["STEP 1", "STEP 2", "STEP 3", "STEP 4"]);
  assert.deepEqual(
    watchRequests.map((r) => r.afterRevision),
    [0n, 1n, 1n, 1n, 1n],
  );
});

test("NOT_FOUND and other errors with an ErrorInfo reason surface at once, without a reconnect", limit, async () => {
  const missing = await outcome(client.watch("missing", fast));
  assert.equal(missing.err?.code, Code.NotFound);
  assert.equal(errorInfo(missing.err)?.reason, "WORKFLOW_NOT_FOUND");
  assert.equal(errorInfo(missing.err)?.metadata["name"], "workflows/missing");
  assert.equal(watchRequests.length, 1);

  await client.startWorkflow({ definition: "mail-approval", workflowId: "c" });
  watchRequests = [];
  // Fails before its first message, as the server's own errors do.
  script = async function* () {
    yield* [];
    throw statewrightError(Code.Internal, "STORE_ERROR");
  };
  const internal = await outcome(client.watch("c", fast));
  assert.equal(internal.err?.code, Code.Internal);
  assert.equal(errorInfo(internal.err)?.reason, "STORE_ERROR");
  assert.equal(watchRequests.length, 1);
});

test("RATE_LIMITED (with a RetryInfo) is waited out and resumed; TOO_MANY_WATCHES is final", limit, async () => {
  await completedReviewLoop("rl");
  script = async function* (req, ctx, attempt) {
    if (attempt === 2) {
      yield* [];
      throw rateLimited(5);
    }
    let sent = 0;
    for await (const m of fakeWatch(req, ctx)) {
      yield m;
      if (attempt === 1 && ++sent === 1) throw new ConnectError("connection reset", Code.Unavailable);
    }
  };
  const messages = await collect(client.watch("rl", { ...fast, afterRevision: 0n }));
  assert.deepEqual(revisions(messages), ["STEP 1", "STEP 2", "STEP 3", "STEP 4"]);
  assert.deepEqual(
    watchRequests.map((r) => r.afterRevision),
    [0n, 1n, 1n],
  );

  watchRequests = [];
  script = async function* () {
    yield* [];
    throw statewrightError(Code.ResourceExhausted, "TOO_MANY_WATCHES", { limit: "2" });
  };
  const tooMany = await outcome(client.watch("rl", fast));
  assert.equal(tooMany.err?.code, Code.ResourceExhausted);
  assert.equal(errorInfo(tooMany.err)?.reason, "TOO_MANY_WATCHES");
  assert.equal(watchRequests.length, 1);
});

test("a stream that ends OK with nothing new finishes quietly when the instance ended at a seen revision", limit, async () => {
  await client.startWorkflow({ definition: "mail-approval", workflowId: "d" });
  await client.resumeWorkflow({ name: "workflows/d", event: "approve" });
  const messages = await collect(client.watch("d", { ...fast, afterRevision: 2n }));
  assert.deepEqual(messages, []);
  assert.equal(watchRequests.length, 1);
  assert.equal(getCalls, 1);
});

test("a stream that ends OK before the terminal revision is resumed when GetWorkflow shows more", limit, async () => {
  await client.startWorkflow({ definition: "mail-approval", workflowId: "d2" });
  script = async function* (req, ctx, attempt) {
    for await (const m of fakeWatch(req, ctx)) {
      yield m;
      if (attempt === 1) return; // a clean end, as from a server going away gracefully
    }
  };
  const messages: WatchWorkflowResponse[] = [];
  for await (const m of client.watch("d2", fast)) {
    messages.push(m);
    if (m.type === WatchEventType.CURRENT) await client.resumeWorkflow({ name: "workflows/d2", event: "approve" });
  }
  assert.deepEqual(revisions(messages), ["CURRENT 1", "STEP 2"]);
  assert.deepEqual(
    watchRequests.map((r) => r.afterRevision),
    [undefined, 1n],
  );
  assert.equal(getCalls, 1);
});

test("watch gives up after its reconnect budget without progress and throws the last error", limit, async () => {
  await client.startWorkflow({ definition: "mail-approval", workflowId: "e" });
  // Every stream starts (a replayed revision 1 first), so the transport's own retries,
  // which only cover a stream that has not started, stay out of it.
  script = async function* (req, ctx) {
    for await (const m of fakeWatch({ ...req, afterRevision: undefined }, ctx)) {
      yield m;
      throw new ConnectError("replica down", Code.Unavailable);
    }
  };
  const started = performance.now();
  const { messages, err } = await outcome(client.watch("e", { ...fast, reconnectBudgetMs: 50 }));
  assert.ok(performance.now() - started < 2_000);
  assert.deepEqual(revisions(messages), ["CURRENT 1"]);
  assert.equal(err?.code, Code.Unavailable);
  assert.match(err?.rawMessage ?? "", /replica down/);
  assert.ok(watchRequests.length >= 2, `${watchRequests.length} attempts: no reconnect`);
  assert.ok(watchRequests.slice(1).every((r) => r.afterRevision === 1n));
});

test("each revision handed over resets the backoff and its budget", limit, async () => {
  await completedReviewLoop("r");
  script = async function* (req, ctx) {
    for await (const m of fakeWatch(req, ctx)) {
      yield m;
      throw new ConnectError("replica down", Code.Unavailable);
    }
  };
  // Every delay (at least half of 20 ms) outlasts the 10 ms budget, so only the reset after
  // each revision lets the watch go on.
  const options = { initialBackoffMs: 20, maxBackoffMs: 20, reconnectBudgetMs: 10, afterRevision: 0n };
  const messages = await collect(client.watch("r", options));
  assert.deepEqual(revisions(messages), ["STEP 1", "STEP 2", "STEP 3", "STEP 4"]);
  assert.deepEqual(
    watchRequests.map((r) => r.afterRevision),
    [0n, 1n, 2n, 3n],
  );
});

test("watch gives up with UNAVAILABLE when streams keep ending OK before a terminal revision", limit, async () => {
  await client.startWorkflow({ definition: "mail-approval", workflowId: "e2" });
  script = async function* () {};
  const { messages, err } = await outcome(client.watch("e2", { ...fast, reconnectBudgetMs: 30 }));
  assert.deepEqual(messages, []);
  assert.equal(err?.code, Code.Unavailable);
  assert.equal(err?.rawMessage, "watch of workflows/e2 kept ending before a terminal revision");
  assert.ok(watchRequests.length > 1);
  assert.equal(getCalls, watchRequests.length);
});

test("a stream deadline (timeoutMs) surfaces as DEADLINE_EXCEEDED without a reconnect", limit, async () => {
  await client.startWorkflow({ definition: "mail-approval", workflowId: "t" });
  const { messages, err } = await outcome(client.watch("t", { ...fast, timeoutMs: 50 }));
  assert.deepEqual(revisions(messages), ["CURRENT 1"]);
  assert.equal(err?.code, Code.DeadlineExceeded);
  assert.equal(watchRequests.length, 1);
});

test("breaking out of the loop cancels the stream", limit, async () => {
  await client.startWorkflow({ definition: "mail-approval", workflowId: "f" });
  for await (const m of client.watch("f")) {
    assert.equal(m.revision, 1n);
    break;
  }
  const serverSide = watchSignals[0];
  assert.ok(serverSide);
  if (!serverSide.aborted) await once(serverSide, "abort");
  assert.equal(watchRequests.length, 1);
});

test("the abort signal ends the watch with CANCELED, also while it backs off", limit, async () => {
  await client.startWorkflow({ definition: "mail-approval", workflowId: "g" });
  const streaming = new AbortController();
  const messages: WatchWorkflowResponse[] = [];
  await assert.rejects(
    async () => {
      for await (const m of client.watch("g", { signal: streaming.signal })) {
        messages.push(m);
        streaming.abort();
      }
    },
    (err: unknown) => ConnectError.from(err).code === Code.Canceled,
  );
  assert.deepEqual(revisions(messages), ["CURRENT 1"]);
  assert.equal(watchRequests.length, 1);

  watchRequests = [];
  script = async function* (req, ctx) {
    for await (const m of fakeWatch(req, ctx)) {
      yield m;
      throw new ConnectError("replica down", Code.Unavailable);
    }
  };
  const backingOff = new AbortController();
  const started = performance.now();
  // A minute-long first delay: only the abort can end this test in time.
  const watch = client.watch("g", { signal: backingOff.signal, initialBackoffMs: 60_000, maxBackoffMs: 60_000 });
  const first = await watch.next();
  assert.equal(first.value?.revision, 1n);
  const rest = watch.next();
  setTimeout(() => backingOff.abort(), 20);
  await assert.rejects(rest, (err: unknown) => ConnectError.from(err).code === Code.Canceled);
  assert.ok(performance.now() - started < 2_000);
  assert.equal(watchRequests.length, 1);
});

test("a connection that breaks mid-stream is resumed on a new one", limit, async () => {
  await client.startWorkflow({ definition: "review-loop", workflowId: "h" });
  const next: [string, Record<string, number>?][] = [["score", { score: 0.5 }], ["revised"], ["score", { score: 0.9 }]];
  const messages: WatchWorkflowResponse[] = [];
  let signaller = client;
  for await (const m of client.watch("h", fast)) {
    messages.push(m);
    if (m.revision === 2n) {
      served.dropConnections();
      // A unary call racing the broken connection fails with INTERNAL (REFUSED_STREAM),
      // which the service config does not retry: signal over a connection of its own.
      signaller = createStatewrightClient(served.target);
    }
    const step = next.shift();
    if (step) await signaller.signalWorkflow({ name: "workflows/h", event: step[0], payload: step[1] });
  }
  assert.deepEqual(revisions(messages), ["CURRENT 1", "STEP 2", "STEP 3", "STEP 4"]);
  // The broken stream ends with CANCELLED and no ErrorInfo, like a caller's cancel would;
  // only the caller's own signal makes that final.
  const [first, ...resumed] = watchRequests.map((r) => r.afterRevision);
  assert.equal(first, undefined);
  assert.ok(resumed.length >= 1 && resumed.every((a) => a === 2n), `resumed after ${resumed.join(", ")}`);
});
