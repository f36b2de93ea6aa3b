// Command payments_worker runs the tasks of queue "payments": it charges an order and
// returns the charge's id, and declines (non-retryable, type CARD_DECLINED) any amount of
// 1000 or more. It runs until interrupted (Ctrl-C or SIGTERM), then shuts down gracefully.
// Run it from clients/go against a server whose definitions have a task state on queue
// payments:
//
//	go run ./examples/payments_worker -target 127.0.0.1:50051
//
// -target defaults to $STATEWRIGHT_ADDRESS (or $STATEWRIGHT_TARGET, or 127.0.0.1:50051);
// STATEWRIGHT_TLS_CA, STATEWRIGHT_TLS_CERT and STATEWRIGHT_TLS_KEY turn TLS (and mTLS) on,
// and STATEWRIGHT_TOKEN is sent as the bearer token.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/statewright/statewright/clients/go/statewright"
)

func main() {
	target := flag.String("target", statewright.EnvAddress(), "the Statewright server, host:port")
	flag.Parse()

	// TLS and a token, when STATEWRIGHT_TLS_CA, _TLS_CERT, _TLS_KEY or _TOKEN say so.
	client, err := statewright.NewClient(*target, statewright.FromEnv())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	worker := statewright.NewWorker(client, statewright.WorkerOptions{Concurrency: 8})
	worker.Register("payments", func(ctx context.Context, task *statewright.Task) (map[string]any, error) {
		amount, _ := task.Input["amount"].(float64)
		if amount >= 1000 {
			return nil, statewright.TaskFailure{
				Type:         "CARD_DECLINED",
				Message:      fmt.Sprintf("%.2f is over the card's limit", amount),
				Details:      map[string]any{"amount": amount},
				NonRetryable: true,
			}
		}
		return map[string]any{"id": fmt.Sprintf("ch-%v", task.Input["order"])}, nil
	})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := worker.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
