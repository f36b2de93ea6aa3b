/**
 * Tracing, through the OpenTelemetry API: with no SDK registered in the process every span
 * is a no-op and nothing is sent.
 *
 * - Every call carries the caller's trace context: the transport's interceptor injects the
 *   active context with the process's registered propagator (the Node SDK registers W3C
 *   Trace Context by default).
 * - A worker runs each attempt in a span ("statewright.task <queue>") that is a child of
 *   the step that scheduled the task (the task's W3C traceparent and tracestate, read with
 *   OpenTelemetry's W3C propagator) and sends that span's context back with its completion
 *   or failure, whose step is then linked to it.
 */
import type { Interceptor } from "@connectrpc/connect";
import {
  type Context,
  type Span,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  propagation,
  trace,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";

import type { Task } from "./gen/statewright/v1/task_pb.js";

const TRACER_NAME = "@statewright/client";

/** The task's fields and the worker's are W3C Trace Context, whatever the process propagates. */
const w3c = new W3CTraceContextPropagator();

/** Puts the active trace context into each call's headers (the registered propagator). */
export const traceInterceptor: Interceptor = (next) => async (req) => {
  propagation.inject(context.active(), req.header, {
    set: (headers: Headers, key: string, value: string) => headers.set(key, value),
  });
  return next(req);
};

/** The context whose span W3C traceparent names (undefined: none given). */
export function contextOf(traceparent: string, tracestate = ""): Context | undefined {
  if (!traceparent) {
    return undefined;
  }
  const carrier: Record<string, string> = { traceparent };
  if (tracestate) {
    carrier.tracestate = tracestate;
  }
  return w3c.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
}

/** Starts the span of one attempt, a child of the step that scheduled the task. */
export function startTaskSpan(task: Task): Span {
  const parent = contextOf(task.traceparent, task.tracestate) ?? ROOT_CONTEXT;
  return trace.getTracer(TRACER_NAME).startSpan(
    `statewright.task ${task.queue}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        "statewright.task": task.name,
        "statewright.queue": task.queue,
        "statewright.state": task.state,
        "statewright.task.attempt": task.attempt,
      },
    },
    parent,
  );
}

/** The span's W3C traceparent and tracestate ("" when it has none). */
export function spanHeaders(span: Span): { traceparent: string; tracestate: string } {
  const carrier: Record<string, string> = {};
  w3c.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, defaultTextMapSetter);
  return { traceparent: carrier.traceparent ?? "", tracestate: carrier.tracestate ?? "" };
}

/** Runs fn with span as the active span (where a context manager is registered). */
export function inSpan<T>(span: Span, fn: () => T): T {
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** Ends an attempt's span; failure: the error type it failed with. */
export function endTaskSpan(span: Span, failure?: string): void {
  if (failure !== undefined) {
    span.setAttribute("statewright.error.type", failure);
    span.setStatus({ code: SpanStatusCode.ERROR, message: failure });
  }
  span.end();
}
