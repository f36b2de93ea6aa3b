package statewright_test

import (
	"context"
	"fmt"
	"log"
	"testing"
	"time"

	"github.com/statewright/statewright/clients/go/statewright"
	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// The README's Batch operations section shows this example's body, verbatim
// (TestReadmeBatchExample): it compiles, so the README's code does.

func ExampleClient_WaitBatchOperation() {
	client, err := statewright.NewClientFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	// Retry every FAILED payment, 20 a second, as a durable batch on the server.
	started, err := client.StartBatchOperation(ctx, &statewrightv1.StartBatchOperationRequest{
		Definition: "payments",
		Filter:     "status = FAILED",
		Operation:  &statewrightv1.StartBatchOperationRequest_Retry{Retry: &statewrightv1.BatchRetry{}},
		Reason:     "the bank is back",
		Rate:       20,
	})
	if err != nil {
		log.Fatal(err)
	}
	ended, err := client.WaitBatchOperation(ctx, started.GetBatch().GetName(), time.Second,
		func(b *statewrightv1.BatchOperation) {
			fmt.Printf("%s: %d of %d done, %d failed\n", b.GetState(), b.GetDone(), b.GetMatched(), b.GetFailed())
		})
	if err != nil {
		log.Fatal(err)
	}
	failures, err := client.GetBatchOperation(ctx, &statewrightv1.GetBatchOperationRequest{Name: ended.GetName()})
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range failures.GetFailures() {
		fmt.Println(f.GetWorkflow(), f.GetCode(), f.GetReason(), f.GetMessage())
	}
}

func TestReadmeBatchExample(t *testing.T) {
	if blocks := readmeExamples(t, "Batch operations", "example_batch_test.go"); blocks != 1 {
		t.Errorf("the Batch operations section has %d Go blocks, want the example", blocks)
	}
}
