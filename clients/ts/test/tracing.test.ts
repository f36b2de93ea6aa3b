// Trace context through the TypeScript client, with an OpenTelemetry SDK registered as an
// application would (a tracer provider, the async-hooks context manager, the W3C
// propagator), over a real HTTP/2 gRPC connection to the in-process fake TaskService.
import assert from "node:assert/strict";
import { test } from "node:test";

import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

import { Worker, createStatewrightClient } from "../src/index.js";
import { FakeTaskService, serve } from "./fake_server.js";

const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());

const TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
const STEP_SPAN = "b7ad6b7169203331";

test("a worker runs the handler in a child span of the task's context and sends it back", { timeout: 20_000 }, async (t) => {
  const fake = new FakeTaskService();
  const served = await serve({}, fake.impl);
  t.after(() => served.close());
  const worker = new Worker(createStatewrightClient(served.target, { serviceConfig: {} }), { initialBackoffMs: 1 });
  let active: string | undefined;
  worker.register("payments", async () => {
    active = trace.getActiveSpan()?.spanContext().spanId;
    return { id: "ch-1" };
  });
  const name = fake.schedule("payments", { order: "o-1" });
  fake.traced(name, `00-${TRACE_ID}-${STEP_SPAN}-01`, "vendor=x");
  const stop = new AbortController();
  t.after(() => stop.abort());
  const running = worker.run({ signal: stop.signal });
  await fake.until(() => fake.completions.length === 1, "the completion");
  stop.abort();
  await running;

  const [span] = exporter.getFinishedSpans().filter((s) => s.name === "statewright.task payments");
  assert.ok(span, "the attempt's span");
  assert.equal(span.spanContext().traceId, TRACE_ID);
  assert.equal(span.parentSpanContext?.spanId, STEP_SPAN);
  assert.equal(span.attributes["statewright.task"], name);
  assert.equal(active, span.spanContext().spanId, "the handler ran in the attempt's span");
  const own = `00-${TRACE_ID}-${span.spanContext().spanId}-01`;
  assert.equal(fake.completions[0]?.traceparent, own);
  assert.equal(fake.completions[0]?.tracestate, "vendor=x");
  // The CompleteTask call itself carries the worker's span as its parent.
  assert.equal(fake.completionTraceparents[0], own);
});

test("every call carries the caller's active trace context", { timeout: 20_000 }, async (t) => {
  const fake = new FakeTaskService();
  const served = await serve({}, fake.impl);
  t.after(() => served.close());
  const client = createStatewrightClient(served.target, { serviceConfig: {} });
  const caller = trace.getTracer("test").startSpan("caller");
  await context.with(trace.setSpan(context.active(), caller), async () => {
    await assert.rejects(client.completeTask({ name: "workflows/w/tasks/1", leaseToken: "l" }));
  });
  caller.end();
  const { traceId, spanId } = caller.spanContext();
  assert.equal(fake.completionTraceparents[0], `00-${traceId}-${spanId}-01`);
});
