// Command conformance executes the shared client conformance scenario against a live
// Statewright server and exits non-zero at the first mismatch.
//
//	STATEWRIGHT_ADDRESS=127.0.0.1:50051 go run ./cmd/conformance [-scenario path]
//
// It connects as statewright.NewClientFromEnv does: STATEWRIGHT_ADDRESS (or the older
// STATEWRIGHT_TARGET), and TLS, mTLS and a token from STATEWRIGHT_TLS_CA, _TLS_CERT,
// _TLS_KEY and _TOKEN.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/statewright/statewright/clients/go/internal/conformance"
	"github.com/statewright/statewright/clients/go/statewright"
	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

func main() {
	scenarioPath := flag.String("scenario", "../conformance/scenario.yaml", "the scenario file")
	timeout := flag.Duration("timeout", 2*time.Minute, "the whole run's deadline")
	wait := flag.Duration("wait", 30*time.Second, "how long to wait for the server to answer before the first step")
	flag.Parse()
	if err := run(*scenarioPath, *timeout, *wait); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}

func run(scenarioPath string, timeout, wait time.Duration) error {
	// No default address: a run against whatever listens on the default port by chance
	// would test the wrong server.
	if os.Getenv(statewright.EnvAddressVar) == "" && os.Getenv(statewright.EnvTargetVar) == "" {
		return fmt.Errorf("%s (host:port of a live server) is not set", statewright.EnvAddressVar)
	}
	target := statewright.EnvAddress()
	sc, err := conformance.LoadScenario(scenarioPath)
	if err != nil {
		return err
	}
	client, err := statewright.NewClient(target, statewright.FromEnv())
	if err != nil {
		return err
	}
	defer client.Close()

	runID := make([]byte, 6)
	if _, err := rand.Read(runID); err != nil {
		return err
	}
	r := &conformance.Runner{Client: client, Tasks: client, Out: os.Stdout, RunID: hex.EncodeToString(runID)}
	fmt.Printf("conformance: %s against %s, run %s\n", scenarioPath, target, r.RunID)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := waitForServer(ctx, client, wait); err != nil {
		return err
	}
	_, err = r.Run(ctx, sc)
	return err
}

// waitForServer calls GetDiagnostics until the server answers anything but UNAVAILABLE, so
// that a runner started together with its server does not race the server's start-up.
func waitForServer(ctx context.Context, client *statewright.Client, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		_, err := client.GetDiagnostics(ctx, &statewrightv1.GetDiagnosticsRequest{})
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("the server did not answer within %s: %w", wait, err)
		case status.Code(err) != codes.Unavailable:
			return nil // the first step reports any other failure
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the server did not answer within %s: %w", wait, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
