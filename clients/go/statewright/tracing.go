package statewright

// Tracing, through the OpenTelemetry API: with no SDK set up in the process
// (otel.SetTracerProvider) every span is a no-op.
//
//   - Every call carries the caller's trace context: the client dials with otelgrpc's
//     client stats handler, which injects it with the process's propagator
//     (otel.SetTextMapPropagator; Go's default propagates nothing, so set
//     propagation.TraceContext{} there to join the server's traces).
//   - A worker runs each attempt in a span ("statewright.task <queue>") that is a child of
//     the step that scheduled the task (the task's W3C traceparent and tracestate), and
//     sends that span's context back with its completion or failure, whose step is then
//     linked to it.

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

const instrumentationName = "github.com/statewright/statewright/clients/go/statewright"

// w3c reads a task's trace context and writes the worker's: those fields are W3C Trace
// Context whatever propagator the process configured for its calls.
var w3c = propagation.TraceContext{}

// startTaskSpan starts the span of one attempt, a child of the step that scheduled the
// task (a root when the task carries no trace context).
func startTaskSpan(ctx context.Context, pb *statewrightv1.Task) (context.Context, trace.Span) {
	carrier := propagation.MapCarrier{}
	if traceparent := pb.GetTraceparent(); traceparent != "" {
		carrier.Set("traceparent", traceparent)
		if tracestate := pb.GetTracestate(); tracestate != "" {
			carrier.Set("tracestate", tracestate)
		}
	}
	ctx = w3c.Extract(ctx, carrier)
	return otel.Tracer(instrumentationName).Start(ctx, "statewright.task "+pb.GetQueue(),
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("statewright.task", pb.GetName()),
			attribute.String("statewright.queue", pb.GetQueue()),
			attribute.String("statewright.state", pb.GetState()),
			attribute.Int("statewright.task.attempt", int(pb.GetAttempt())),
		))
}

// spanHeaders returns span's W3C traceparent and tracestate ("" when it has none).
func spanHeaders(span trace.Span) (traceparent, tracestate string) {
	carrier := propagation.MapCarrier{}
	w3c.Inject(trace.ContextWithSpan(context.Background(), span), carrier)
	return carrier.Get("traceparent"), carrier.Get("tracestate")
}

// endTaskSpan ends an attempt's span, marked as an error when its handler failed.
func endTaskSpan(span trace.Span, out handlerOutcome) {
	if out.err != nil {
		f := failureOf(out.err)
		span.SetAttributes(attribute.String("statewright.error.type", f.Type))
		span.SetStatus(otelcodes.Error, f.Type)
	}
	span.End()
}
