// Command traced_worker runs a worker with OpenTelemetry set up as an application would
// (an SDK tracer provider, the W3C propagator), completes a given number of tasks of one
// queue with a fixed result, and then prints the spans it recorded as JSON lines on
// standard output. The server's tests use it to check that a Go worker's span joins the
// trace of the step that scheduled its task:
//
//	go run ./cmd/traced_worker -queue shipping -result '{"tracking":"TRK-1"}' -tasks 1
//
// -target defaults to $STATEWRIGHT_ADDRESS (or $STATEWRIGHT_TARGET, or 127.0.0.1:50051).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"log"
	"os"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/statewright/statewright/clients/go/statewright"
)

// span is what the tests read of one recorded span.
type span struct {
	Name       string         `json:"name"`
	TraceID    string         `json:"trace_id"`
	SpanID     string         `json:"span_id"`
	ParentID   string         `json:"parent_span_id"`
	Kind       string         `json:"kind"`
	Attributes map[string]any `json:"attributes"`
}

func main() {
	target := flag.String("target", statewright.EnvAddress(), "the Statewright server, host:port")
	queue := flag.String("queue", "shipping", "the queue to work on")
	result := flag.String("result", "{}", "each task's result, a JSON object")
	tasks := flag.Int("tasks", 1, "how many tasks to complete before stopping")
	timeout := flag.Duration("timeout", 60*time.Second, "give up after this long")
	flag.Parse()
	var answer map[string]any
	if err := json.Unmarshal([]byte(*result), &answer); err != nil {
		log.Fatalf("-result: %v", err)
	}

	exporter := tracetest.NewInMemoryExporter()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	otel.SetTracerProvider(provider)
	otel.SetTextMapPropagator(propagation.TraceContext{})

	client, err := statewright.NewClient(*target, statewright.FromEnv())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var done atomic.Int64
	worker := statewright.NewWorker(client, statewright.WorkerOptions{Concurrency: 1})
	worker.Register(*queue, func(context.Context, *statewright.Task) (map[string]any, error) {
		if done.Add(1) >= int64(*tasks) {
			// Shuts down gracefully: this attempt's completion is still sent.
			defer cancel()
		}
		return answer, nil
	})
	if err := worker.Run(ctx); err != nil {
		log.Fatal(err)
	}
	if done.Load() < int64(*tasks) {
		log.Fatalf("completed %d of %d tasks before the timeout", done.Load(), *tasks)
	}
	// The exporter forgets its spans when shut down: read them first.
	if err := provider.ForceFlush(context.Background()); err != nil {
		log.Fatal(err)
	}
	recordedSpans := exporter.GetSpans()
	if err := provider.Shutdown(context.Background()); err != nil {
		log.Fatal(err)
	}
	out := json.NewEncoder(os.Stdout)
	for _, s := range recordedSpans {
		attributes := map[string]any{}
		for _, kv := range s.Attributes {
			attributes[string(kv.Key)] = kv.Value.AsInterface()
		}
		recorded := span{
			Name:       s.Name,
			TraceID:    s.SpanContext.TraceID().String(),
			SpanID:     s.SpanContext.SpanID().String(),
			Kind:       s.SpanKind.String(),
			Attributes: attributes,
		}
		if s.Parent.IsValid() {
			recorded.ParentID = s.Parent.SpanID().String()
		}
		if err := out.Encode(recorded); err != nil {
			log.Fatal(err)
		}
	}
}
