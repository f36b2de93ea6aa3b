import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";

import type { DescMessage, MessageInitShape } from "@bufbuild/protobuf";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type StreamResponse, type Transport, type UnaryResponse } from "@connectrpc/connect";

import {
  GetWorkflowResponseSchema,
  RetryInfoSchema,
  WatchWorkflowRequestSchema,
  WatchWorkflowResponseSchema,
  WorkflowService,
  defaultServiceConfig,
  methodPolicy,
  parseDuration,
  withServiceConfig,
} from "../src/index.js";

const service = "statewright.v1.WorkflowService";

test("defaultServiceConfig is clients/service-config.json", async () => {
  const shared: unknown = JSON.parse(await readFile(new URL("../../../service-config.json", import.meta.url), "utf8"));
  assert.deepEqual(defaultServiceConfig, shared, "stale copy: run clients/ts/generate.sh");
});

test("parseDuration reads protobuf JSON durations", () => {
  assert.equal(parseDuration("10s"), 10_000);
  assert.equal(parseDuration("0.1s"), 100);
  assert.equal(parseDuration("2.5s"), 2_500);
  for (const bad of ["10", "1m", "-1s", "s", "0.1234567890s"]) {
    assert.throws(() => parseDuration(bad), /invalid duration/);
  }
});

test("methodPolicy applies the shipped per-method timeouts and UNAVAILABLE-only retries", () => {
  const get = methodPolicy(defaultServiceConfig, service, "GetWorkflow");
  assert.equal(get.timeoutMs, 10_000);
  assert.deepEqual(get.retry, {
    maxAttempts: 5,
    initialBackoffMs: 100,
    maxBackoffMs: 2_000,
    backoffMultiplier: 2,
    retryableCodes: new Set([Code.Unavailable]),
  });
  assert.equal(methodPolicy(defaultServiceConfig, service, "StartWorkflow").timeoutMs, 30_000);
  const watch = methodPolicy(defaultServiceConfig, service, "WatchWorkflow");
  assert.equal(watch.timeoutMs, undefined, "a watch has no deadline");
  assert.equal(watch.retry?.maxAttempts, 3);
  assert.deepEqual(methodPolicy(defaultServiceConfig, "other.Service", "GetWorkflow"), {});
});

test("methodPolicy falls back to the service entry, then the default entry", () => {
  const config = {
    methodConfig: [
      { name: [{}], timeout: "1s" },
      { name: [{ service }], timeout: "2s" },
      { name: [{ service, method: "GetWorkflow" }], timeout: "3s" },
    ],
  };
  assert.equal(methodPolicy(config, service, "GetWorkflow").timeoutMs, 3_000);
  assert.equal(methodPolicy(config, service, "ListWorkflows").timeoutMs, 2_000);
  assert.equal(methodPolicy(config, "other.Service", "X").timeoutMs, 1_000);
});

/** A transport whose unary and stream calls answer from scripts and record their timeouts. */
class ScriptedTransport implements Transport {
  readonly timeouts: (number | undefined)[] = [];
  readonly inputs: unknown[] = [];
  constructor(private readonly failures: (Code | ConnectError)[]) {}

  private next(timeoutMs: number | undefined): void {
    this.timeouts.push(timeoutMs);
    const failure = this.failures.shift();
    if (failure !== undefined) {
      throw typeof failure === "number" ? new ConnectError("scripted", failure) : failure;
    }
  }

  async unary<I extends DescMessage, O extends DescMessage>(
    method: { input: I; output: O },
    _signal: AbortSignal | undefined,
    timeoutMs: number | undefined,
    _header: unknown,
    input: MessageInitShape<I>,
  ): Promise<UnaryResponse<I, O>> {
    this.inputs.push(input);
    this.next(timeoutMs);
    return { message: create(method.output) } as unknown as UnaryResponse<I, O>;
  }

  async stream<I extends DescMessage, O extends DescMessage>(
    _method: unknown,
    _signal: AbortSignal | undefined,
    timeoutMs: number | undefined,
    _header: unknown,
    input: AsyncIterable<MessageInitShape<I>>,
  ): Promise<StreamResponse<I, O>> {
    for await (const m of input) this.inputs.push(m);
    this.next(timeoutMs);
    async function* messages() {
      yield create(WatchWorkflowResponseSchema, { revision: 1n });
    }
    return { message: messages() } as unknown as StreamResponse<I, O>;
  }
}

const getWorkflow = WorkflowService.method.getWorkflow;
const watchWorkflow = WorkflowService.method.watchWorkflow;
const noJitter = { random: () => 0 };

test("unary calls retry UNAVAILABLE until they succeed", async () => {
  const inner = new ScriptedTransport([Code.Unavailable, Code.Unavailable]);
  const t = withServiceConfig(inner, defaultServiceConfig, noJitter);
  const res = await t.unary(getWorkflow, undefined, undefined, undefined, { name: "workflows/a" });
  assert.equal(res.message.$typeName, GetWorkflowResponseSchema.typeName);
  assert.equal(inner.timeouts.length, 3);
  assert.equal(inner.inputs.length, 3);
});

test("unary calls stop after maxAttempts and surface the last error", async () => {
  const inner = new ScriptedTransport(Array(10).fill(Code.Unavailable));
  const t = withServiceConfig(inner, defaultServiceConfig, noJitter);
  await assert.rejects(t.unary(getWorkflow, undefined, undefined, undefined, {}), (err) => {
    assert.equal(ConnectError.from(err).code, Code.Unavailable);
    return true;
  });
  assert.equal(inner.timeouts.length, 5);
});

test("other codes are not retried", async () => {
  for (const code of [Code.Aborted, Code.DeadlineExceeded, Code.ResourceExhausted, Code.Internal]) {
    const inner = new ScriptedTransport([code, code]);
    const t = withServiceConfig(inner, defaultServiceConfig, noJitter);
    await assert.rejects(t.unary(getWorkflow, undefined, undefined, undefined, {}));
    assert.equal(inner.timeouts.length, 1, `code ${Code[code]}`);
  }
});

test("the method timeout applies unless the caller's is shorter, and spans the retries", async () => {
  const inner = new ScriptedTransport([Code.Unavailable]);
  const t = withServiceConfig(inner, defaultServiceConfig, noJitter);
  await t.unary(getWorkflow, undefined, undefined, undefined, {});
  const [first, second] = inner.timeouts;
  assert.ok(first !== undefined && first <= 10_000 && first > 9_000, `first attempt timeout ${first}`);
  assert.ok(second !== undefined && second <= first, "the retry gets what is left of the deadline");

  const short = new ScriptedTransport([]);
  await withServiceConfig(short, defaultServiceConfig).unary(getWorkflow, undefined, 500, undefined, {});
  assert.ok((short.timeouts[0] ?? Infinity) <= 500);
  const long = new ScriptedTransport([]);
  await withServiceConfig(long, defaultServiceConfig).unary(getWorkflow, undefined, 60_000, undefined, {});
  assert.ok((long.timeouts[0] ?? Infinity) <= 10_000);
});

test("an aborted call is not retried", async () => {
  const inner = new ScriptedTransport([Code.Unavailable, Code.Unavailable]);
  const controller = new AbortController();
  controller.abort();
  const t = withServiceConfig(inner, defaultServiceConfig, noJitter);
  await assert.rejects(t.unary(getWorkflow, controller.signal, undefined, undefined, {}));
  assert.equal(inner.timeouts.length, 1);
});

test("a backoff that would pass the deadline ends the retries", async () => {
  const inner = new ScriptedTransport([Code.Unavailable, Code.Unavailable]);
  const t = withServiceConfig(inner, defaultServiceConfig, { random: () => 0.999 });
  // ~100 ms backoff but only 20 ms left of the caller's deadline.
  await assert.rejects(t.unary(getWorkflow, undefined, 20, undefined, {}));
  assert.equal(inner.timeouts.length, 1);
});

test("a retry waits at least a RetryInfo's delay: one that would pass the deadline ends the retries", async () => {
  const pushback = (ms: number) =>
    new ConnectError("scripted", Code.Unavailable, undefined, [
      { desc: RetryInfoSchema, value: { retryDelay: { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1e6 } } },
    ]);
  // Jitter alone would retry at once (random 0); the server asked for 5 s, 1 s is left.
  const inner = new ScriptedTransport([pushback(5_000), Code.Unavailable]);
  await assert.rejects(withServiceConfig(inner, defaultServiceConfig, noJitter).unary(getWorkflow, undefined, 1_000, undefined, {}));
  assert.equal(inner.timeouts.length, 1);
  // A short one is waited out, and the call retried.
  const short = new ScriptedTransport([pushback(5)]);
  await withServiceConfig(short, defaultServiceConfig, noJitter).unary(getWorkflow, undefined, 1_000, undefined, {});
  assert.equal(short.timeouts.length, 2);
});

test("server streams retry UNAVAILABLE before the response starts, replaying the request", async () => {
  const inner = new ScriptedTransport([Code.Unavailable, Code.Unavailable]);
  const t = withServiceConfig(inner, defaultServiceConfig, noJitter);
  async function* request() {
    yield create(WatchWorkflowRequestSchema, { name: "workflows/a" });
  }
  const res = await t.stream(watchWorkflow, undefined, undefined, undefined, request());
  const received = [];
  for await (const m of res.message) received.push(m);
  assert.equal(received.length, 1);
  assert.equal(inner.inputs.length, 3, "the one request was sent on each of the three attempts");
  assert.deepEqual(inner.timeouts, [undefined, undefined, undefined], "WatchWorkflow has no deadline");

  const exhausted = new ScriptedTransport([Code.Unavailable, Code.Unavailable, Code.Unavailable]);
  await assert.rejects(withServiceConfig(exhausted, defaultServiceConfig, noJitter).stream(watchWorkflow, undefined, undefined, undefined, request()));
  assert.equal(exhausted.timeouts.length, 3, "WatchWorkflow's maxAttempts is 3");
});
