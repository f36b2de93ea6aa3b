// Command start_resume starts a mail-approval workflow, which halts WAITING for a person's
// decision, then resumes it with "approve" at the revision it read, as a person's
// approval would. Run it against a server with the example definitions loaded:
//
//	go run ./examples/start_resume -target 127.0.0.1:50051
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
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/statewright/statewright/clients/go/statewright"
	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Start: the instance runs its first step and halts in the wait state.
	input, err := structpb.NewStruct(map[string]any{"topic": "quarterly report"})
	if err != nil {
		log.Fatal(err)
	}
	started, err := client.StartWorkflow(ctx, &statewrightv1.StartWorkflowRequest{
		Definition: "mail-approval",
		Input:      input,
	})
	if err != nil {
		log.Fatalf("start: %v", err)
	}
	wf := started.GetWorkflow()
	fmt.Printf("started %s: %s in %q at revision %d, accepts %v\n",
		wf.GetName(), wf.GetStatus(), wf.GetState(), wf.GetRevision(), wf.GetAcceptedEvents())

	// Resume, later: fire the decision, but only if nobody moved the instance meanwhile.
	resumed, err := client.ResumeWorkflow(ctx, &statewrightv1.ResumeWorkflowRequest{
		Name:             wf.GetName(),
		Event:            "approve",
		ExpectedRevision: wf.GetRevision(),
	})
	if err != nil {
		if info, ok := statewright.ErrorInfo(err); ok && info.GetReason() == "REVISION_MISMATCH" {
			log.Fatalf("someone else moved %s first: it is at revision %s now",
				wf.GetName(), info.GetMetadata()["actual_revision"])
		}
		log.Fatalf("resume: %s (reason %s)", status.Code(err), statewright.Reason(err))
	}
	wf = resumed.GetWorkflow()
	fmt.Printf("resumed %s: %s at revision %d, sent=%v\n",
		wf.GetName(), wf.GetStatus(), wf.GetRevision(), wf.GetContext().GetFields()["sent"].GetBoolValue())
	if wf.GetStatus() != statewrightv1.WorkflowStatus_WORKFLOW_STATUS_COMPLETED {
		log.Fatalf("expected COMPLETED, got %s", wf.GetStatus())
	}
}
