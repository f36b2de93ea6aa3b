// Command conformance executes the shared client conformance scenario against a live
// Statewright server and exits non-zero at the first mismatch.
//
//	STATEWRIGHT_TARGET=127.0.0.1:50051 go run ./cmd/conformance [-scenario path]
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/statewright/statewright/clients/go/internal/conformance"
	"github.com/statewright/statewright/clients/go/statewright"
)

func main() {
	scenarioPath := flag.String("scenario", "../conformance/scenario.yaml", "the scenario file")
	timeout := flag.Duration("timeout", 2*time.Minute, "the whole run's deadline")
	flag.Parse()
	if err := run(*scenarioPath, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}

func run(scenarioPath string, timeout time.Duration) error {
	target := os.Getenv("STATEWRIGHT_TARGET")
	if target == "" {
		return fmt.Errorf("STATEWRIGHT_TARGET (host:port of a live server) is not set")
	}
	sc, err := conformance.LoadScenario(scenarioPath)
	if err != nil {
		return err
	}
	client, err := statewright.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer client.Close()

	runID := make([]byte, 6)
	if _, err := rand.Read(runID); err != nil {
		return err
	}
	r := &conformance.Runner{Client: client, Out: os.Stdout, RunID: hex.EncodeToString(runID)}
	fmt.Printf("conformance: %s against %s, run %s\n", scenarioPath, target, r.RunID)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err = r.Run(ctx, sc)
	return err
}
