package statewright

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// Until names what Execute waits for.
type Until int

const (
	// UntilRest waits until the instance rests: WAITING, COMPLETED, FAILED or CANCELLED.
	UntilRest Until = iota
	// UntilFinish waits until the instance has finished: COMPLETED, FAILED or CANCELLED.
	UntilFinish
)

func (u Until) String() string {
	if u == UntilFinish {
		return "finish"
	}
	return "rest"
}

// ExecuteOptions tunes Client.Execute; the zero value waits for a rest, as long as ctx
// allows.
type ExecuteOptions struct {
	Until Until
	// Timeout bounds the whole call; when it passes Execute returns an
	// *ExecutionTimedOutError and the instance goes on running. Zero: no bound beyond ctx's.
	Timeout time.Duration
}

// ExecutionTimedOutError is Execute's answer when its Timeout passed first. The instance
// was started and goes on running; Workflow is it as last seen. status.Code reads it as
// DEADLINE_EXCEEDED.
type ExecutionTimedOutError struct {
	Workflow *statewrightv1.Workflow
	Timeout  time.Duration
	Until    Until
}

func (e *ExecutionTimedOutError) Error() string {
	st := strings.TrimPrefix(e.Workflow.GetStatus().String(), "WORKFLOW_STATUS_")
	return fmt.Sprintf("%s did not %s within %s; it is %s in %q and goes on running",
		e.Workflow.GetName(), e.Until, e.Timeout, st, e.Workflow.GetState())
}

// GRPCStatus lets status.Code and status.FromError read the error as DEADLINE_EXCEEDED.
func (e *ExecutionTimedOutError) GRPCStatus() *status.Status {
	return status.New(codes.DeadlineExceeded, e.Error())
}

var errArrived = errors.New("the instance arrived")

// Execute starts an instance (req as for StartWorkflow) and returns it once it rests or,
// with UntilFinish, once it finished. A FAILED instance is returned, not an error: its
// Error field says why. The start carries a request id (one is made when req has none),
// so a start retried by gRPC never makes a second instance; req itself is not changed.
func (c *Client) Execute(ctx context.Context, req *statewrightv1.StartWorkflowRequest, opts ExecuteOptions) (*statewrightv1.Workflow, error) {
	start := proto.Clone(req).(*statewrightv1.StartWorkflowRequest)
	if start.GetRequestId() == "" {
		start.RequestId = newRequestID()
	}
	bounded, cancel := ctx, context.CancelFunc(func() {})
	if opts.Timeout > 0 {
		bounded, cancel = context.WithTimeout(ctx, opts.Timeout)
	}
	defer cancel()
	resp, err := c.StartWorkflow(bounded, start)
	if err != nil {
		return nil, err
	}
	latest := resp.GetWorkflow()
	if arrived(latest, opts.Until) {
		return latest, nil
	}
	after := latest.GetRevision()
	err = c.Watch(bounded, latest.GetName(), WatchOptions{AfterRevision: &after}, func(msg *statewrightv1.WatchWorkflowResponse) error {
		latest = msg.GetWorkflow()
		if arrived(latest, opts.Until) {
			return errArrived
		}
		return nil
	})
	if errors.Is(err, errArrived) {
		return latest, nil
	}
	// The server ends the stream at the deadline it was sent (DEADLINE_EXCEEDED) and that
	// answer can arrive before this side's own timer has fired: either is the timeout.
	deadline := bounded.Err() != nil || (opts.Timeout > 0 && status.Code(err) == codes.DeadlineExceeded)
	timedOut := deadline && ctx.Err() == nil
	if err != nil && !timedOut {
		return nil, err
	}
	// The timeout passed (or the watch ended at a terminal revision it had already
	// replayed): read where the instance stands now, with a fresh deadline.
	read, cancelRead := context.WithTimeout(ctx, 10*time.Second)
	defer cancelRead()
	got, err := c.GetWorkflow(read, &statewrightv1.GetWorkflowRequest{Name: latest.GetName()})
	if err != nil {
		return nil, err
	}
	current := got.GetWorkflow()
	if arrived(current, opts.Until) {
		return current, nil
	}
	return nil, &ExecutionTimedOutError{Workflow: current, Timeout: opts.Timeout, Until: opts.Until}
}

func arrived(wf *statewrightv1.Workflow, until Until) bool {
	if terminal(wf) {
		return true
	}
	return until == UntilRest && wf.GetStatus() == statewrightv1.WorkflowStatus_WORKFLOW_STATUS_WAITING
}

func newRequestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}
