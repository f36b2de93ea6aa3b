package conformance

import (
	"context"
	"strconv"
	"sync"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// fakeServer is an in-memory WorkflowService that behaves like the example definitions
// as far as the conformance scenario looks. Its knobs make it deviate on purpose.
type fakeServer struct {
	statewrightv1.UnimplementedWorkflowServiceServer

	mismatchReason string                        // ErrorInfo reason for a stale resume
	watchEndErr    error                         // how a watch ends after the terminal revision (nil = OK)
	skipRevision   bool                          // watch: leave a revision out
	duplicatePage  bool                          // list: repeat the first workflow on page two
	signalStatus   *statewrightv1.WorkflowStatus // force the status signal responses report
	noPendingTask  bool                          // leave Workflow.pending_task out
	dropRefundID   bool                          // apply a refund's result without its id
	extraTask      bool                          // list the first task twice

	mu        sync.Mutex
	order     []string
	workflows map[string]*statewrightv1.Workflow
	history   map[string][]*statewrightv1.WatchWorkflowResponse
	changed   *sync.Cond
	// Tasks, oldest first; tasksChanged is closed and replaced whenever one is scheduled.
	tasks        []*statewrightv1.Task
	tasksChanged chan struct{}
	leases       int
}

func newFakeServer() *fakeServer {
	s := &fakeServer{
		mismatchReason: "REVISION_MISMATCH",
		workflows:      map[string]*statewrightv1.Workflow{},
		history:        map[string][]*statewrightv1.WatchWorkflowResponse{},
		tasksChanged:   make(chan struct{}),
	}
	s.changed = sync.NewCond(&s.mu)
	return s
}

func statusError(code codes.Code, reason string, metadata map[string]string) error {
	st, err := status.New(code, reason).WithDetails(&errdetails.ErrorInfo{
		Reason: reason, Domain: "statewright.dev", Metadata: metadata,
	})
	if err != nil {
		panic(err)
	}
	return st.Err()
}

func terminal(st statewrightv1.WorkflowStatus) bool {
	return st == statewrightv1.WorkflowStatus_WORKFLOW_STATUS_COMPLETED ||
		st == statewrightv1.WorkflowStatus_WORKFLOW_STATUS_FAILED ||
		st == statewrightv1.WorkflowStatus_WORKFLOW_STATUS_CANCELLED
}

// save records a new revision of wf; the caller holds mu.
func (s *fakeServer) save(wf *statewrightv1.Workflow, event string) *statewrightv1.Workflow {
	wf.Revision++
	if terminal(wf.GetStatus()) {
		wf.AcceptedEvents = nil
	}
	snapshot := proto.Clone(wf).(*statewrightv1.Workflow)
	s.history[wf.GetName()] = append(s.history[wf.GetName()], &statewrightv1.WatchWorkflowResponse{
		Type: statewrightv1.WatchEventType_WATCH_EVENT_TYPE_STEP, Revision: wf.GetRevision(), Workflow: snapshot, Event: event,
	})
	s.changed.Broadcast()
	return snapshot
}

func (s *fakeServer) StartWorkflow(_ context.Context, req *statewrightv1.StartWorkflowRequest) (*statewrightv1.StartWorkflowResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := "workflows/" + req.GetWorkflowId()
	if old, ok := s.workflows[name]; ok {
		if req.GetIfExists() == statewrightv1.IfExistsPolicy_IF_EXISTS_POLICY_RESTART && terminal(old.GetStatus()) {
			return &statewrightv1.StartWorkflowResponse{Workflow: s.restart(old, req), Created: true}, nil
		}
		return nil, statusError(codes.AlreadyExists, "WORKFLOW_ALREADY_EXISTS", map[string]string{"workflow_id": req.GetWorkflowId()})
	}
	wf := &statewrightv1.Workflow{Name: name, WorkflowId: req.GetWorkflowId(), Definition: req.GetDefinition(), Version: 1, Run: 1}
	switch req.GetDefinition() {
	case "mail-approval":
		wf.State, wf.Status, wf.AcceptedEvents = "awaiting_approval", statewrightv1.WorkflowStatus_WORKFLOW_STATUS_WAITING, []string{"approve", "reject"}
	case "review-loop":
		wf.State, wf.Status, wf.AcceptedEvents = "evaluating", statewrightv1.WorkflowStatus_WORKFLOW_STATUS_RUNNING, []string{"score"}
	case "order-pricing":
		wf.State, wf.Status = "shipped", statewrightv1.WorkflowStatus_WORKFLOW_STATUS_COMPLETED
	case "order-fulfilment":
		s.startOrder(wf, req.GetInput().AsMap())
	default:
		return nil, statusError(codes.NotFound, "DEFINITION_NOT_FOUND", map[string]string{"definition": req.GetDefinition()})
	}
	s.workflows[name] = wf
	s.order = append(s.order, name)
	return &statewrightv1.StartWorkflowResponse{Workflow: s.save(wf, ""), Created: true}, nil
}

// restart begins the next run of a finished mail-approval instance as the server does:
// from its first state again, its context under the request's input; the caller holds mu.
func (s *fakeServer) restart(wf *statewrightv1.Workflow, req *statewrightv1.StartWorkflowRequest) *statewrightv1.Workflow {
	fields := wf.GetContext().AsMap()
	for k, v := range req.GetInput().AsMap() {
		fields[k] = v
	}
	merged, err := structpb.NewStruct(fields)
	if err != nil {
		panic(err)
	}
	wf.Context, wf.Run = merged, wf.GetRun()+1
	wf.State, wf.Status, wf.AcceptedEvents = "awaiting_approval", statewrightv1.WorkflowStatus_WORKFLOW_STATUS_WAITING, []string{"approve", "reject"}
	return s.save(wf, "restart")
}

func (s *fakeServer) ResumeWorkflow(_ context.Context, req *statewrightv1.ResumeWorkflowRequest) (*statewrightv1.ResumeWorkflowResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wf, ok := s.workflows[req.GetName()]
	if !ok {
		return nil, statusError(codes.NotFound, "WORKFLOW_NOT_FOUND", nil)
	}
	if exp := req.GetExpectedRevision(); exp != 0 && exp != wf.GetRevision() {
		return nil, statusError(codes.Aborted, s.mismatchReason, map[string]string{
			"actual_revision": strconv.FormatInt(wf.GetRevision(), 10), "expected_revision": strconv.FormatInt(exp, 10),
		})
	}
	// A finished instance stays in the state it finished from, as the server's do.
	wf.State, wf.Status = "send", statewrightv1.WorkflowStatus_WORKFLOW_STATUS_COMPLETED
	if req.GetEvent() == "reject" {
		wf.State = "rejected"
	}
	return &statewrightv1.ResumeWorkflowResponse{Workflow: s.save(wf, req.GetEvent())}, nil
}

func (s *fakeServer) GetWorkflow(_ context.Context, req *statewrightv1.GetWorkflowRequest) (*statewrightv1.GetWorkflowResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wf, ok := s.workflows[req.GetName()]
	if !ok {
		return nil, statusError(codes.NotFound, "WORKFLOW_NOT_FOUND", nil)
	}
	return &statewrightv1.GetWorkflowResponse{Workflow: proto.Clone(wf).(*statewrightv1.Workflow)}, nil
}

func (s *fakeServer) SignalWorkflow(_ context.Context, req *statewrightv1.SignalWorkflowRequest) (*statewrightv1.SignalWorkflowResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wf, ok := s.workflows[req.GetName()]
	if !ok {
		return nil, statusError(codes.NotFound, "WORKFLOW_NOT_FOUND", nil)
	}
	resp := &statewrightv1.SignalWorkflowResponse{}
	switch {
	case wf.GetStatus() != statewrightv1.WorkflowStatus_WORKFLOW_STATUS_RUNNING:
		resp.Reason = statewrightv1.SignalRejection_SIGNAL_REJECTION_NOT_RUNNING
		resp.Workflow = proto.Clone(wf).(*statewrightv1.Workflow)
	case wf.GetState() == "evaluating" && req.GetEvent() == "score":
		if req.GetPayload().GetFields()["score"].GetNumberValue() >= 0.8 {
			wf.State, wf.Status = "accepted", statewrightv1.WorkflowStatus_WORKFLOW_STATUS_COMPLETED
		} else {
			wf.State, wf.AcceptedEvents = "improving", []string{"revised"}
		}
		resp.Accepted, resp.Workflow = true, s.save(wf, req.GetEvent())
	case wf.GetState() == "improving" && req.GetEvent() == "revised":
		wf.State, wf.AcceptedEvents = "evaluating", []string{"score"}
		resp.Accepted, resp.Workflow = true, s.save(wf, req.GetEvent())
	default:
		return nil, statusError(codes.InvalidArgument, "UNKNOWN_EVENT", map[string]string{"event": req.GetEvent()})
	}
	if s.signalStatus != nil {
		resp.Workflow.Status = *s.signalStatus
	}
	return resp, nil
}

func (s *fakeServer) ListWorkflows(_ context.Context, req *statewrightv1.ListWorkflowsRequest) (*statewrightv1.ListWorkflowsResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var matching []*statewrightv1.Workflow
	for _, name := range s.order {
		if wf := s.workflows[name]; req.GetDefinition() == "" || wf.GetDefinition() == req.GetDefinition() {
			matching = append(matching, wf)
		}
	}
	offset := 0
	if req.GetPageToken() != "" {
		var err error
		if offset, err = strconv.Atoi(req.GetPageToken()); err != nil {
			return nil, statusError(codes.InvalidArgument, "INVALID_PAGE_TOKEN", nil)
		}
	}
	size := int(req.GetPageSize())
	end := min(offset+size, len(matching))
	resp := &statewrightv1.ListWorkflowsResponse{Workflows: matching[offset:end]}
	if s.duplicatePage && offset > 0 {
		resp.Workflows = append([]*statewrightv1.Workflow{matching[0]}, resp.Workflows...)
	}
	if end < len(matching) {
		resp.NextPageToken = strconv.Itoa(end)
	}
	return resp, nil
}

func (s *fakeServer) GetDiagnostics(context.Context, *statewrightv1.GetDiagnosticsRequest) (*statewrightv1.GetDiagnosticsResponse, error) {
	return &statewrightv1.GetDiagnosticsResponse{
		Build:       &statewrightv1.BuildInfo{Version: "0.0.0-fake"},
		Definitions: []string{"definitions/mail-approval/versions/1", "definitions/review-loop/versions/1"},
	}, nil
}

func (s *fakeServer) WatchWorkflow(req *statewrightv1.WatchWorkflowRequest, stream statewrightv1.WorkflowService_WatchWorkflowServer) error {
	s.mu.Lock()
	wf, ok := s.workflows[req.GetName()]
	if !ok {
		s.mu.Unlock()
		return statusError(codes.NotFound, "WORKFLOW_NOT_FOUND", nil)
	}
	current := proto.Clone(wf).(*statewrightv1.Workflow)
	s.mu.Unlock()
	stop := context.AfterFunc(stream.Context(), s.wake)
	defer stop()
	if err := stream.Send(&statewrightv1.WatchWorkflowResponse{
		Type: statewrightv1.WatchEventType_WATCH_EVENT_TYPE_CURRENT, Revision: current.GetRevision(), Workflow: current,
	}); err != nil {
		return err
	}
	next := current.GetRevision() + 1
	for !terminal(current.GetStatus()) {
		s.mu.Lock()
		for int64(len(s.history[req.GetName()])) < next && stream.Context().Err() == nil {
			s.changed.Wait()
		}
		if err := stream.Context().Err(); err != nil {
			s.mu.Unlock()
			return err
		}
		msg := s.history[req.GetName()][next-1]
		s.mu.Unlock()
		next++
		current = msg.GetWorkflow()
		if s.skipRevision && !terminal(current.GetStatus()) {
			continue
		}
		if s.skipRevision {
			// Send a revision that skips one, to exercise the order check.
			msg = proto.Clone(msg).(*statewrightv1.WatchWorkflowResponse)
			msg.Revision++
			msg.Workflow.Revision++
		}
		if err := stream.Send(msg); err != nil {
			return err
		}
	}
	return s.watchEndErr
}

// wake releases watchers blocked in WatchWorkflow when their stream is cancelled.
func (s *fakeServer) wake() {
	s.mu.Lock()
	s.changed.Broadcast()
	s.mu.Unlock()
}
