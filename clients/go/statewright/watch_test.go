package statewright_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/statewright/statewright/clients/go/statewright"
	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

const (
	waiting   = statewrightv1.WorkflowStatus_WORKFLOW_STATUS_WAITING
	running   = statewrightv1.WorkflowStatus_WORKFLOW_STATUS_RUNNING
	completed = statewrightv1.WorkflowStatus_WORKFLOW_STATUS_COMPLETED
)

// fastWatch keeps reconnect waits at a millisecond or two, so the tests never sleep long.
var fastWatch = statewright.WatchOptions{InitialBackoff: time.Millisecond, ReconnectBudget: time.Second}

// watchAttempt scripts one WatchWorkflow stream: send msgs, then end with end (nil: OK),
// or, with hold, stay open until the client goes away.
type watchAttempt struct {
	msgs []*statewrightv1.WatchWorkflowResponse
	end  error
	hold bool
}

// watchServer plays a script of WatchWorkflow streams, one per attempt (then exhausted
// for every further attempt), answers GetWorkflow with current, and records requests.
type watchServer struct {
	statewrightv1.UnimplementedWorkflowServiceServer
	script    []watchAttempt
	exhausted watchAttempt
	current   *statewrightv1.Workflow

	mu           sync.Mutex
	requests     []*statewrightv1.WatchWorkflowRequest
	hadDeadlines []bool
	getCalls     int
}

func (s *watchServer) WatchWorkflow(req *statewrightv1.WatchWorkflowRequest, stream statewrightv1.WorkflowService_WatchWorkflowServer) error {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	_, hasDeadline := stream.Context().Deadline()
	s.hadDeadlines = append(s.hadDeadlines, hasDeadline)
	attempt := s.exhausted
	if n := len(s.requests); n <= len(s.script) {
		attempt = s.script[n-1]
	}
	s.mu.Unlock()
	// Headers commit the call, so gRPC's own retry policy (which replays a trailers-only
	// UNAVAILABLE) stays out of the way: every attempt seen here is one of Watch's.
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	for _, msg := range attempt.msgs {
		if err := stream.Send(msg); err != nil {
			return err
		}
	}
	if attempt.hold {
		<-stream.Context().Done()
		return stream.Context().Err()
	}
	return attempt.end
}

func (s *watchServer) GetWorkflow(_ context.Context, req *statewrightv1.GetWorkflowRequest) (*statewrightv1.GetWorkflowResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.getCalls++
	if s.current == nil {
		return nil, status.Error(codes.NotFound, "no such workflow: "+req.GetName())
	}
	return &statewrightv1.GetWorkflowResponse{Workflow: s.current}, nil
}

func (s *watchServer) attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

func (s *watchServer) firstName() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[0].GetName()
}

func (s *watchServer) deadlines() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.hadDeadlines)
}

func (s *watchServer) gets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.getCalls
}

// afterRevisions lists each attempt's after_revision, -1 when unset.
func (s *watchServer) afterRevisions() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int64
	for _, req := range s.requests {
		if req.AfterRevision == nil {
			out = append(out, -1)
		} else {
			out = append(out, req.GetAfterRevision())
		}
	}
	return out
}

func watchMessage(typ statewrightv1.WatchEventType, revision int64, st statewrightv1.WorkflowStatus) *statewrightv1.WatchWorkflowResponse {
	return &statewrightv1.WatchWorkflowResponse{
		Type:     typ,
		Revision: revision,
		Workflow: &statewrightv1.Workflow{Name: "workflows/wf-1", Revision: revision, Status: st},
	}
}

func current(revision int64, st statewrightv1.WorkflowStatus) *statewrightv1.WatchWorkflowResponse {
	return watchMessage(statewrightv1.WatchEventType_WATCH_EVENT_TYPE_CURRENT, revision, st)
}

func step(revision int64, st statewrightv1.WorkflowStatus) *statewrightv1.WatchWorkflowResponse {
	return watchMessage(statewrightv1.WatchEventType_WATCH_EVENT_TYPE_STEP, revision, st)
}

func withReason(t *testing.T, code codes.Code, reason string) error {
	t.Helper()
	st, err := status.New(code, strings.ToLower(reason)).WithDetails(
		&errdetails.ErrorInfo{Reason: reason, Domain: statewright.Domain})
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

// collect watches wf-1 and returns the revisions handed over, in order.
func collect(t *testing.T, client *statewright.Client, opts statewright.WatchOptions) ([]int64, error) {
	t.Helper()
	var seen []int64
	err := client.Watch(context.Background(), "wf-1", opts, func(msg *statewrightv1.WatchWorkflowResponse) error {
		seen = append(seen, msg.GetRevision())
		return nil
	})
	return seen, err
}

func TestWatchFollowsToTheTerminalRevision(t *testing.T) {
	// hold: the watch must stop after the terminal revision, not wait for the server's OK.
	srv := &watchServer{script: []watchAttempt{
		{msgs: []*statewrightv1.WatchWorkflowResponse{current(1, waiting), step(2, running), step(3, completed)}, hold: true},
	}}
	client := newTestClient(t, srv)
	var types []statewrightv1.WatchEventType
	var seen []int64
	err := client.Watch(context.Background(), "wf-1", statewright.WatchOptions{}, func(msg *statewrightv1.WatchWorkflowResponse) error {
		types = append(types, msg.GetType())
		seen = append(seen, msg.GetRevision())
		return nil
	})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if want := []int64{1, 2, 3}; !slices.Equal(seen, want) {
		t.Errorf("revisions = %v, want %v", seen, want)
	}
	if types[0] != statewrightv1.WatchEventType_WATCH_EVENT_TYPE_CURRENT || types[1] != statewrightv1.WatchEventType_WATCH_EVENT_TYPE_STEP {
		t.Errorf("types = %v, want CURRENT then STEPs", types)
	}
	if got := srv.afterRevisions(); !slices.Equal(got, []int64{-1}) {
		t.Errorf("after_revision per attempt = %v, want one attempt without it", got)
	}
	if name := srv.firstName(); name != "workflows/wf-1" {
		t.Errorf("name = %q, want the resource name of the bare id", name)
	}
	if srv.deadlines()[0] {
		t.Error("the stream had a deadline; by default a watch has none")
	}
}

func TestWatchResumesAfterTheLastRevisionHandedOver(t *testing.T) {
	srv := &watchServer{script: []watchAttempt{
		{msgs: []*statewrightv1.WatchWorkflowResponse{current(1, waiting), step(2, running)}, end: status.Error(codes.Unavailable, "connection reset")},
		// A replica replays one revision the caller has already seen.
		{msgs: []*statewrightv1.WatchWorkflowResponse{step(2, running), step(3, waiting), step(4, completed)}},
	}}
	client := newTestClient(t, srv)
	seen, err := collect(t, client, fastWatch)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if want := []int64{1, 2, 3, 4}; !slices.Equal(seen, want) {
		t.Errorf("revisions = %v, want %v, each once", seen, want)
	}
	if got, want := srv.afterRevisions(), []int64{-1, 2}; !slices.Equal(got, want) {
		t.Errorf("after_revision per attempt = %v, want %v", got, want)
	}
}

func TestWatchResumesFromTheCallersRevisionBeforeAnyProgress(t *testing.T) {
	srv := &watchServer{script: []watchAttempt{
		{end: status.Error(codes.Internal, "stream reset")},
		{msgs: []*statewrightv1.WatchWorkflowResponse{step(5, waiting), step(6, completed)}},
	}}
	client := newTestClient(t, srv)
	after := int64(5)
	opts := fastWatch
	opts.AfterRevision = &after
	seen, err := collect(t, client, opts)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if want := []int64{6}; !slices.Equal(seen, want) {
		t.Errorf("revisions = %v, want %v", seen, want)
	}
	if got, want := srv.afterRevisions(), []int64{5, 5}; !slices.Equal(got, want) {
		t.Errorf("after_revision per attempt = %v, want %v", got, want)
	}
	if after != 5 {
		t.Errorf("Watch changed the caller's AfterRevision to %d", after)
	}
}

func TestWatchSurfacesServerErrorsAtOnce(t *testing.T) {
	for name, end := range map[string]error{
		"NOT_FOUND":         withReason(t, codes.NotFound, "WORKFLOW_NOT_FOUND"),
		"INTERNAL + reason": withReason(t, codes.Internal, "RECOVERY_REQUIRED"),
		"INVALID_ARGUMENT":  status.Error(codes.InvalidArgument, "bad name"),
	} {
		t.Run(name, func(t *testing.T) {
			srv := &watchServer{script: []watchAttempt{{end: end}}, exhausted: watchAttempt{msgs: []*statewrightv1.WatchWorkflowResponse{current(1, completed)}}}
			client := newTestClient(t, srv)
			seen, err := collect(t, client, fastWatch)
			if status.Code(err) != status.Code(end) || statewright.Reason(err) != statewright.Reason(end) {
				t.Fatalf("err = %v (reason %q), want %v", err, statewright.Reason(err), end)
			}
			if len(seen) != 0 || srv.attempts() != 1 {
				t.Errorf("saw %v over %d attempts, want nothing over one", seen, srv.attempts())
			}
		})
	}
}

func TestWatchWaitsOutARateLimit(t *testing.T) {
	srv := &watchServer{script: []watchAttempt{
		{end: rateLimited(t, 5*time.Millisecond)},
		{msgs: []*statewrightv1.WatchWorkflowResponse{current(1, waiting), step(2, completed)}},
	}}
	seen, err := collect(t, newTestClient(t, srv), fastWatch)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if want := []int64{1, 2}; !slices.Equal(seen, want) || srv.attempts() != 2 {
		t.Errorf("revisions = %v over %d streams, want %v over 2", seen, srv.attempts(), want)
	}

	// Too many watches open says nothing of when to try again: that is final.
	srv = &watchServer{script: []watchAttempt{{end: withReason(t, codes.ResourceExhausted, "TOO_MANY_WATCHES")}}}
	if _, err := collect(t, newTestClient(t, srv), fastWatch); statewright.Reason(err) != "TOO_MANY_WATCHES" || srv.attempts() != 1 {
		t.Errorf("Watch = %v after %d streams, want TOO_MANY_WATCHES after 1", err, srv.attempts())
	}
}

func TestWatchResumesAfterAShuttingDownReplica(t *testing.T) {
	srv := &watchServer{script: []watchAttempt{
		{msgs: []*statewrightv1.WatchWorkflowResponse{current(1, waiting)}, end: withReason(t, codes.Unavailable, "SHUTTING_DOWN")},
		{msgs: []*statewrightv1.WatchWorkflowResponse{step(2, completed)}},
	}}
	client := newTestClient(t, srv)
	seen, err := collect(t, client, fastWatch)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if want := []int64{1, 2}; !slices.Equal(seen, want) {
		t.Errorf("revisions = %v, want %v", seen, want)
	}
}

func TestWatchEndsQuietlyWhenNothingIsLeft(t *testing.T) {
	// Opened after the end: the server has nothing to send and ends OK.
	srv := &watchServer{script: []watchAttempt{{}}, current: &statewrightv1.Workflow{Name: "workflows/wf-1", Revision: 3, Status: completed}}
	client := newTestClient(t, srv)
	after := int64(3)
	opts := fastWatch
	opts.AfterRevision = &after
	seen, err := collect(t, client, opts)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if len(seen) != 0 || srv.attempts() != 1 || srv.gets() != 1 {
		t.Errorf("saw %v over %d attempts and %d GetWorkflow calls, want nothing, one, one", seen, srv.attempts(), srv.gets())
	}
}

func TestWatchReconnectsWhenAStreamEndsEarly(t *testing.T) {
	srv := &watchServer{
		script: []watchAttempt{
			{msgs: []*statewrightv1.WatchWorkflowResponse{current(1, waiting)}},
			{msgs: []*statewrightv1.WatchWorkflowResponse{step(2, completed)}},
		},
		current: &statewrightv1.Workflow{Name: "workflows/wf-1", Revision: 2, Status: completed},
	}
	client := newTestClient(t, srv)
	seen, err := collect(t, client, fastWatch)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if want := []int64{1, 2}; !slices.Equal(seen, want) {
		t.Errorf("revisions = %v, want %v", seen, want)
	}
	if got, want := srv.afterRevisions(), []int64{-1, 1}; !slices.Equal(got, want) {
		t.Errorf("after_revision per attempt = %v, want %v", got, want)
	}
}

func TestWatchGivesUpWhenTheBudgetRunsOut(t *testing.T) {
	opts := statewright.WatchOptions{InitialBackoff: time.Millisecond, ReconnectBudget: 20 * time.Millisecond}
	t.Run("failing", func(t *testing.T) {
		srv := &watchServer{exhausted: watchAttempt{end: status.Error(codes.Unavailable, "replica gone")}}
		client := newTestClient(t, srv)
		_, err := collect(t, client, opts)
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "replica gone") {
			t.Fatalf("err = %v, want the last UNAVAILABLE", err)
		}
		if srv.attempts() < 2 {
			t.Errorf("%d attempts, want reconnects before giving up", srv.attempts())
		}
	})
	t.Run("ending OK", func(t *testing.T) {
		srv := &watchServer{
			script:  []watchAttempt{{msgs: []*statewrightv1.WatchWorkflowResponse{current(1, waiting)}}},
			current: &statewrightv1.Workflow{Name: "workflows/wf-1", Revision: 1, Status: waiting},
		}
		client := newTestClient(t, srv)
		seen, err := collect(t, client, opts)
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "kept ending before a terminal revision") {
			t.Fatalf("err = %v, want UNAVAILABLE: kept ending", err)
		}
		if !slices.Equal(seen, []int64{1}) {
			t.Errorf("revisions = %v, want [1]", seen)
		}
	})
}

func TestWatchStopsOnACallbackError(t *testing.T) {
	srv := &watchServer{script: []watchAttempt{
		{msgs: []*statewrightv1.WatchWorkflowResponse{current(1, waiting), step(2, running)}, hold: true},
	}}
	client := newTestClient(t, srv)
	stop := errors.New("enough")
	calls := 0
	err := client.Watch(context.Background(), "workflows/wf-1", fastWatch, func(*statewrightv1.WatchWorkflowResponse) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) {
		t.Fatalf("err = %v, want the callback's", err)
	}
	if calls != 1 || srv.attempts() != 1 {
		t.Errorf("%d calls over %d attempts, want one and one", calls, srv.attempts())
	}
}

func TestWatchStopsWhenTheCallerCancels(t *testing.T) {
	srv := &watchServer{script: []watchAttempt{{msgs: []*statewrightv1.WatchWorkflowResponse{current(1, waiting)}, hold: true}}}
	client := newTestClient(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := client.Watch(ctx, "wf-1", fastWatch, func(*statewrightv1.WatchWorkflowResponse) error {
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if srv.attempts() != 1 {
		t.Errorf("%d attempts, want no reconnect", srv.attempts())
	}
}

func TestWatchStopsWhenTheClientCloses(t *testing.T) {
	srv := &watchServer{script: []watchAttempt{{msgs: []*statewrightv1.WatchWorkflowResponse{current(1, waiting)}, hold: true}}}
	client := newTestClient(t, srv)
	// A closed connection fails every new stream with CANCELED too, so only the time taken
	// tells a watch that stopped from one that kept reconnecting for its whole budget.
	opts := fastWatch
	opts.ReconnectBudget = 5 * time.Second
	began := time.Now()
	err := client.Watch(context.Background(), "wf-1", opts, func(*statewrightv1.WatchWorkflowResponse) error {
		return client.Close()
	})
	if status.Code(err) != codes.Canceled {
		t.Fatalf("err = %v, want CANCELED", err)
	}
	if took := time.Since(began); took > time.Second {
		t.Errorf("Watch took %v after Close, want it to stop at once", took)
	}
	if srv.attempts() != 1 {
		t.Errorf("%d attempts, want no reconnect", srv.attempts())
	}
}

func TestWatchTimeoutBoundsEachStream(t *testing.T) {
	srv := &watchServer{script: []watchAttempt{{msgs: []*statewrightv1.WatchWorkflowResponse{current(1, waiting)}, hold: true}}}
	client := newTestClient(t, srv)
	opts := fastWatch
	opts.Timeout = 50 * time.Millisecond
	seen, err := collect(t, client, opts)
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("err = %v, want DEADLINE_EXCEEDED", err)
	}
	if !slices.Equal(seen, []int64{1}) || srv.attempts() != 1 || !srv.deadlines()[0] {
		t.Errorf("saw %v over %d attempts (deadline %v), want [1] over one with a deadline", seen, srv.attempts(), srv.deadlines())
	}
}
