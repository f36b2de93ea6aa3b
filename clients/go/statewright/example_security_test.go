package statewright_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/statewright/statewright/clients/go/statewright"
	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// The README's Security section shows the bodies of these examples, verbatim
// (TestReadmeSecurityExamples): they compile, so the README's code does.

func ExampleWithCAFile() {
	// TLS, the server checked against a CA of one's own; mTLS with a client certificate.
	client, err := statewright.NewClient("statewright.internal:50051",
		statewright.WithCAFile("/etc/statewright/ca.pem"),
		statewright.WithClientCertFiles("/etc/statewright/tls.crt", "/etc/statewright/tls.key"),
		statewright.WithToken(os.Getenv("PAYMENTS_API_KEY")),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
}

// fetchJWT stands for an identity provider's client.
func fetchJWT(context.Context) (string, time.Time, error) {
	return "eyJ...", time.Now().Add(time.Hour), nil
}

func ExampleWithTokenSource() {
	// A refreshing token: asked for when none is cached, reused until shortly before
	// Expiry, and asked for again after the server answers UNAUTHENTICATED.
	tokens := statewright.TokenSourceFunc(func(ctx context.Context) (statewright.Token, error) {
		jwt, expiry, err := fetchJWT(ctx)
		return statewright.Token{Value: jwt, Expiry: expiry}, err
	})
	client, err := statewright.NewClient("statewright.example.com:443",
		statewright.WithTLS(), // the system's roots
		statewright.WithTokenSource(tokens),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
}

func ExampleNewClientFromEnv() {
	// STATEWRIGHT_ADDRESS, STATEWRIGHT_TOKEN, STATEWRIGHT_TLS_CA, _CERT and _KEY; options
	// given here override what the environment says.
	client, err := statewright.NewClientFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
}

func ExampleErrPermissionDenied() {
	var client *statewright.Client // as made above
	ctx := context.Background()
	_, err := client.StartWorkflow(ctx, &statewrightv1.StartWorkflowRequest{Definition: "order-fulfilment"})
	var e *statewright.Error
	switch {
	case errors.Is(err, statewright.ErrUnauthenticated):
		log.Fatal("no valid credentials: ", err)
	case errors.Is(err, statewright.ErrPermissionDenied):
		log.Fatal("this caller may not start order-fulfilment: ", err)
	case errors.Is(err, statewright.ErrRateLimited):
		delay, _ := statewright.RetryDelay(err)
		fmt.Println("over the rate; the next call would pass in", delay)
	case errors.As(err, &e):
		fmt.Println(e.Code, e.Reason, e.Metadata)
	}
}

// TestReadmeSecurityExamples keeps the README's Security section compiling: each of its
// Go blocks must be the body of an example above, verbatim.
func TestReadmeSecurityExamples(t *testing.T) {
	if blocks := readmeExamples(t, "Security", "example_security_test.go"); blocks != 4 {
		t.Errorf("the Security section has %d Go blocks, want the 4 examples", blocks)
	}
}

// readmeExamples checks that every Go block of the README's section under heading is, tab
// indented, part of the source file (an example's body, so it compiles), and answers how
// many blocks there were.
func readmeExamples(t *testing.T, heading, file string) int {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	source, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %s section", heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := 0
	for _, part := range strings.Split(section, "```go\n")[1:] {
		block, _, _ := strings.Cut(part, "```\n")
		lines := strings.Split(strings.TrimSuffix(block, "\n"), "\n")
		for i, line := range lines {
			if line != "" {
				lines[i] = "\t" + line
			}
		}
		if indented := strings.Join(lines, "\n"); !strings.Contains(string(source), indented) {
			t.Errorf("a Go block of the README's %s section is no example's body:\n%s", heading, indented)
		}
		blocks++
	}
	return blocks
}
