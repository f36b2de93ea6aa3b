package statewright_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/statewright/statewright/clients/go/statewright"
	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// executeServer answers StartWorkflow with first, then plays the watch script.
type executeServer struct {
	watchServer
	first *statewrightv1.Workflow

	startMu sync.Mutex
	starts  []*statewrightv1.StartWorkflowRequest
}

func (s *executeServer) StartWorkflow(_ context.Context, req *statewrightv1.StartWorkflowRequest) (*statewrightv1.StartWorkflowResponse, error) {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	s.starts = append(s.starts, req)
	return &statewrightv1.StartWorkflowResponse{Workflow: s.first}, nil
}

func wf(revision int64, st statewrightv1.WorkflowStatus) *statewrightv1.Workflow {
	return &statewrightv1.Workflow{Name: "workflows/wf-1", Revision: revision, Status: st, State: "s"}
}

func TestExecuteReturnsAtOnceWhenTheStartRests(t *testing.T) {
	srv := &executeServer{first: wf(1, waiting)}
	client := newTestClient(t, srv)
	req := &statewrightv1.StartWorkflowRequest{Definition: "d"}
	got, err := client.Execute(context.Background(), req, statewright.ExecuteOptions{})
	if err != nil || got.GetStatus() != waiting {
		t.Fatalf("Execute = %v, %v; want the WAITING instance", got, err)
	}
	if srv.attempts() != 0 {
		t.Errorf("a resting start opened %d watches, want none", srv.attempts())
	}
	if srv.starts[0].GetRequestId() == "" || req.GetRequestId() != "" {
		t.Errorf("request id %q sent, caller's request changed to %q", srv.starts[0].GetRequestId(), req.GetRequestId())
	}
}

func TestExecuteUntilFinishWatchesPastAWait(t *testing.T) {
	srv := &executeServer{first: wf(1, running)}
	srv.script = []watchAttempt{{msgs: []*statewrightv1.WatchWorkflowResponse{step(2, waiting), step(3, running), step(4, completed)}, hold: true}}
	client := newTestClient(t, srv)
	got, err := client.Execute(context.Background(), &statewrightv1.StartWorkflowRequest{Definition: "d"},
		statewright.ExecuteOptions{Until: statewright.UntilFinish})
	if err != nil || got.GetRevision() != 4 || got.GetStatus() != completed {
		t.Fatalf("Execute = %v, %v; want revision 4 COMPLETED", got, err)
	}
	if after := srv.afterRevisions(); len(after) != 1 || after[0] != 1 {
		t.Errorf("watched after %v, want after the start's revision 1", after)
	}
}

func TestExecuteUntilRestStopsAtTheFirstWait(t *testing.T) {
	srv := &executeServer{first: wf(1, running)}
	srv.script = []watchAttempt{{msgs: []*statewrightv1.WatchWorkflowResponse{step(2, running), step(3, waiting)}, hold: true}}
	client := newTestClient(t, srv)
	got, err := client.Execute(context.Background(), &statewrightv1.StartWorkflowRequest{Definition: "d"}, statewright.ExecuteOptions{})
	if err != nil || got.GetRevision() != 3 {
		t.Fatalf("Execute = %v, %v; want revision 3 WAITING", got, err)
	}
}

func TestExecuteTimesOutAndSaysTheInstanceGoesOn(t *testing.T) {
	srv := &executeServer{first: wf(1, running)}
	srv.script = []watchAttempt{{msgs: []*statewrightv1.WatchWorkflowResponse{step(2, running)}, hold: true}}
	srv.current = wf(2, running)
	client := newTestClient(t, srv)
	_, err := client.Execute(context.Background(), &statewrightv1.StartWorkflowRequest{Definition: "d"},
		statewright.ExecuteOptions{Until: statewright.UntilFinish, Timeout: 200 * time.Millisecond})
	var late *statewright.ExecutionTimedOutError
	if !errors.As(err, &late) {
		t.Fatalf("err = %v, want an ExecutionTimedOutError", err)
	}
	if late.Workflow.GetRevision() != 2 || late.Workflow.GetStatus() != running {
		t.Errorf("last seen = %v, want revision 2 RUNNING", late.Workflow)
	}
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("status.Code = %v, want DEADLINE_EXCEEDED", status.Code(err))
	}
}

func TestExecuteReturnsAFailedStartAsIs(t *testing.T) {
	srv := &executeServer{first: wf(1, statewrightv1.WorkflowStatus_WORKFLOW_STATUS_FAILED)}
	client := newTestClient(t, srv)
	got, err := client.Execute(context.Background(), &statewrightv1.StartWorkflowRequest{Definition: "d"},
		statewright.ExecuteOptions{Until: statewright.UntilFinish})
	if err != nil || got.GetStatus() != statewrightv1.WorkflowStatus_WORKFLOW_STATUS_FAILED {
		t.Fatalf("Execute = %v, %v; want the FAILED instance, no error", got, err)
	}
}

func TestExecuteTakesTheServersDeadlineAnswerAsTheTimeout(t *testing.T) {
	// The server ends the stream at the deadline it was sent, which can reach the client
	// before the client's own timer fires.
	srv := &executeServer{first: wf(1, running)}
	srv.script = []watchAttempt{{msgs: []*statewrightv1.WatchWorkflowResponse{step(2, running)},
		end: status.Error(codes.DeadlineExceeded, "stream terminated by RST_STREAM with error code: CANCEL")}}
	srv.current = wf(2, running)
	client := newTestClient(t, srv)
	_, err := client.Execute(context.Background(), &statewrightv1.StartWorkflowRequest{Definition: "d"},
		statewright.ExecuteOptions{Until: statewright.UntilFinish, Timeout: time.Minute})
	var late *statewright.ExecutionTimedOutError
	if !errors.As(err, &late) || late.Workflow.GetRevision() != 2 {
		t.Fatalf("err = %v, want an ExecutionTimedOutError at revision 2", err)
	}
}
