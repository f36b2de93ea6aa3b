package statewright_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/statewright/statewright/clients/go/statewright"
	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// With an SDK set up as an application would, the worker runs the handler in a span that
// is a child of the task's trace context, and sends that span's context back; the
// CompleteTask call itself (otelgrpc's client span) is a child of it.
func TestWorkerSpanIsAChildOfTheTaskAndGoesBackWithTheReport(t *testing.T) {
	exporter := tracetest.NewInMemoryExporter()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter)))
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() {
		otel.SetTracerProvider(tracenoop.NewTracerProvider())
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
	})
	const traceID, stepSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	srv := newTaskServer()
	srv.add(&statewrightv1.Task{Queue: "payments", Traceparent: "00-" + traceID + "-" + stepSpan + "-01", Tracestate: "vendor=x"})
	w := statewright.NewWorker(newTaskClient(t, srv), statewright.WorkerOptions{Logger: quiet()})
	active := make(chan trace.SpanContext, 1)
	w.Register("payments", func(ctx context.Context, task *statewright.Task) (map[string]any, error) {
		active <- trace.SpanContextFromContext(ctx)
		return map[string]any{"id": "ch-1"}, nil
	})
	rw := runWorker(t, w)
	eventually(t, "the completion", func() bool {
		var n int
		srv.read(func() { n = len(srv.completes) })
		return n == 1
	})
	if err := rw.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}

	var attempt, call *tracetest.SpanStub
	spans := exporter.GetSpans()
	for i := range spans {
		switch spans[i].Name {
		case "statewright.task payments":
			attempt = &spans[i]
		case "statewright.v1.TaskService/CompleteTask":
			call = &spans[i]
		}
	}
	if attempt == nil || call == nil {
		t.Fatalf("spans %v: want the attempt's and the CompleteTask call's", exporter.GetSpans())
	}
	if attempt.SpanContext.TraceID().String() != traceID || attempt.Parent.SpanID().String() != stepSpan {
		t.Errorf("the attempt's span is in %s under %s, want %s under %s",
			attempt.SpanContext.TraceID(), attempt.Parent.SpanID(), traceID, stepSpan)
	}
	if attempt.SpanKind != trace.SpanKindConsumer {
		t.Errorf("span kind %v, want consumer", attempt.SpanKind)
	}
	if got := <-active; got.SpanID() != attempt.SpanContext.SpanID() {
		t.Errorf("the handler ran in span %s, want the attempt's %s", got.SpanID(), attempt.SpanContext.SpanID())
	}
	if call.Parent.SpanID() != attempt.SpanContext.SpanID() {
		t.Errorf("CompleteTask's span is under %s, want the attempt's %s", call.Parent.SpanID(), attempt.SpanContext.SpanID())
	}
	own := "00-" + traceID + "-" + attempt.SpanContext.SpanID().String() + "-01"
	srv.read(func() {
		c := srv.completes[0]
		if c.GetTraceparent() != own || c.GetTracestate() != "vendor=x" {
			t.Errorf("CompleteTask carried %q / %q, want %q / vendor=x", c.GetTraceparent(), c.GetTracestate(), own)
		}
	})
}
