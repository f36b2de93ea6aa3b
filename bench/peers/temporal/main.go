// Command temporal-dev serves Temporal's development server on 127.0.0.1 for the HITL
// comparison (bench/peers/temporal_hitl.py): the lite server of Temporal's own Go module
// (go.temporal.io/server/temporaltest), on in-memory SQLite, as `temporal server
// start-dev` runs by default. It prints where it listens and its namespace, then serves
// until SIGTERM or SIGINT.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/server/temporaltest"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	server := temporaltest.NewServer()
	fmt.Printf("temporal serving on %s namespace %s\n",
		server.GetFrontendHostPort(), server.GetDefaultNamespace())
	<-stop
	// In memory: nothing to keep. Its Stop reports errors through a *testing.T this
	// command does not have, so the process simply ends.
	os.Exit(0)
}
