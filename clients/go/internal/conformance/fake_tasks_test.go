package conformance

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// fakeTaskPageSize is small so that the scenario's three tasks span two pages.
const fakeTaskPageSize = 2

// fakeTaskServer is the fake's TaskService: order-fulfilment's tasks, as the example
// definition runs them (charging, then shipping; a shipment that gives up is refunded).
type fakeTaskServer struct {
	statewrightv1.UnimplementedTaskServiceServer
	s *fakeServer
}

// startOrder enters charging, as the real first step does from received; the caller
// holds mu and saves wf.
func (s *fakeServer) startOrder(wf *statewrightv1.Workflow, input map[string]any) {
	items, _ := input["items"].([]any)
	price, _ := input["price"].(float64)
	total := price * float64(len(items))
	wf.State, wf.Status = "charging", statewrightv1.WorkflowStatus_WORKFLOW_STATUS_RUNNING
	wf.AcceptedEvents = []string{"cancel_order"}
	s.setContext(wf, map[string]any{
		"items": items, "price": price, "total": total, "charge_id": "", "tracking": "",
		"refund_id": "", "failure": map[string]any{}, "log": []any{"received"},
	})
	s.schedule(wf, "payments", map[string]any{"order": wf.GetWorkflowId(), "amount": total})
}

func (s *fakeServer) setContext(wf *statewrightv1.Workflow, m map[string]any) {
	st, err := structpb.NewStruct(m)
	if err != nil {
		panic(err)
	}
	wf.Context = st
}

// schedule writes the task of the state wf is entering, in the step about to be saved.
func (s *fakeServer) schedule(wf *statewrightv1.Workflow, queue string, input map[string]any) {
	in, err := structpb.NewStruct(input)
	if err != nil {
		panic(err)
	}
	revision := wf.GetRevision() + 1
	t := &statewrightv1.Task{
		Name:     fmt.Sprintf("%s/tasks/%d", wf.GetName(), revision),
		Workflow: wf.GetName(), State: wf.GetState(), Queue: queue, Input: in,
		Status: statewrightv1.TaskStatus_TASK_STATUS_SCHEDULED, Revision: revision,
	}
	s.tasks = append(s.tasks, t)
	close(s.tasksChanged)
	s.tasksChanged = make(chan struct{})
	if !s.noPendingTask {
		wf.PendingTask = proto.Clone(t).(*statewrightv1.Task)
	}
}

// leased finds the task a worker reports on and checks its lease; the caller holds mu.
func (s *fakeServer) leased(name, token string) (*statewrightv1.Task, error) {
	for _, t := range s.tasks {
		if t.GetName() != name {
			continue
		}
		if t.GetStatus() != statewrightv1.TaskStatus_TASK_STATUS_LEASED || t.GetLeaseToken() != token {
			return nil, statusError(codes.FailedPrecondition, "LEASE_SUPERSEDED", map[string]string{"task": name})
		}
		return t, nil
	}
	return nil, statusError(codes.NotFound, "TASK_NOT_FOUND", map[string]string{"task": name})
}

func (f *fakeTaskServer) PollTasks(ctx context.Context, req *statewrightv1.PollTasksRequest) (*statewrightv1.PollTasksResponse, error) {
	s := f.s
	wait := time.NewTimer(req.GetWait().AsDuration())
	defer wait.Stop()
	for {
		s.mu.Lock()
		var out []*statewrightv1.Task
		for _, t := range s.tasks {
			if len(out) == max(int(req.GetMaxTasks()), 1) {
				break
			}
			if t.GetQueue() == req.GetQueue() && t.GetStatus() == statewrightv1.TaskStatus_TASK_STATUS_SCHEDULED {
				s.leases++
				t.Status = statewrightv1.TaskStatus_TASK_STATUS_LEASED
				t.Attempt++
				t.LeaseToken = "lease-" + strconv.Itoa(s.leases)
				t.LeaseExpireTime = timestamppb.New(time.Now().Add(30 * time.Second))
				out = append(out, proto.Clone(t).(*statewrightv1.Task))
			}
		}
		changed := s.tasksChanged
		s.mu.Unlock()
		if len(out) > 0 {
			return &statewrightv1.PollTasksResponse{Tasks: out}, nil
		}
		select {
		case <-changed:
		case <-wait.C:
			return &statewrightv1.PollTasksResponse{}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (f *fakeTaskServer) HeartbeatTask(_ context.Context, req *statewrightv1.HeartbeatTaskRequest) (*statewrightv1.HeartbeatTaskResponse, error) {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.leased(req.GetName(), req.GetLeaseToken())
	if err != nil {
		return nil, err
	}
	t.LeaseExpireTime = timestamppb.New(time.Now().Add(30 * time.Second))
	return &statewrightv1.HeartbeatTaskResponse{LeaseExpireTime: t.GetLeaseExpireTime()}, nil
}

func (f *fakeTaskServer) CompleteTask(_ context.Context, req *statewrightv1.CompleteTaskRequest) (*statewrightv1.CompleteTaskResponse, error) {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.leased(req.GetName(), req.GetLeaseToken())
	if err != nil {
		return nil, err
	}
	t.Status, t.LeaseToken, t.LeaseExpireTime = statewrightv1.TaskStatus_TASK_STATUS_COMPLETED, "", nil
	wf := s.workflows[t.GetWorkflow()]
	c := wf.GetContext().AsMap()
	id := fmt.Sprint(req.GetResult().AsMap()["id"])
	wf.PendingTask = nil
	switch t.GetState() {
	case "charging":
		c["charge_id"] = id
		wf.State, wf.AcceptedEvents = "shipping", nil
		s.schedule(wf, "shipping", map[string]any{"order": wf.GetWorkflowId(), "items": c["items"]})
	case "refunding":
		if !s.dropRefundID {
			c["refund_id"] = id
		}
		wf.State, wf.Status = "refunded", statewrightv1.WorkflowStatus_WORKFLOW_STATUS_COMPLETED
	default:
		return nil, statusError(codes.Unimplemented, "FAKE_UNSUPPORTED", map[string]string{"state": t.GetState()})
	}
	s.setContext(wf, c)
	return &statewrightv1.CompleteTaskResponse{Workflow: s.save(wf, "task_completed"), Task: proto.Clone(t).(*statewrightv1.Task)}, nil
}

// FailTask gives up at once for a non-retryable failure and schedules the task again
// otherwise (the fake has no backoff).
func (f *fakeTaskServer) FailTask(_ context.Context, req *statewrightv1.FailTaskRequest) (*statewrightv1.FailTaskResponse, error) {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.leased(req.GetName(), req.GetLeaseToken())
	if err != nil {
		return nil, err
	}
	t.LeaseToken, t.LeaseExpireTime = "", nil
	t.LastError = req.GetError()
	wf := s.workflows[t.GetWorkflow()]
	if !req.GetNonRetryable() {
		t.Status = statewrightv1.TaskStatus_TASK_STATUS_SCHEDULED
		close(s.tasksChanged)
		s.tasksChanged = make(chan struct{})
		return &statewrightv1.FailTaskResponse{Task: proto.Clone(t).(*statewrightv1.Task), Workflow: proto.Clone(wf).(*statewrightv1.Workflow)}, nil
	}
	t.Status = statewrightv1.TaskStatus_TASK_STATUS_FAILED
	c := wf.GetContext().AsMap()
	c["failure"] = map[string]any{
		"type": req.GetError().GetType(), "message": req.GetError().GetMessage(),
		"details": req.GetError().GetDetails().AsMap(), "attempts": float64(t.GetAttempt()),
	}
	wf.PendingTask = nil
	switch t.GetState() {
	case "shipping":
		wf.State = "refunding"
		s.schedule(wf, "payments", map[string]any{"order": wf.GetWorkflowId(), "refund": c["charge_id"], "amount": c["total"]})
	case "charging":
		wf.State, wf.Status = "declined", statewrightv1.WorkflowStatus_WORKFLOW_STATUS_COMPLETED
	default:
		return nil, statusError(codes.Unimplemented, "FAKE_UNSUPPORTED", map[string]string{"state": t.GetState()})
	}
	s.setContext(wf, c)
	return &statewrightv1.FailTaskResponse{Task: proto.Clone(t).(*statewrightv1.Task), Workflow: s.save(wf, "task_failed")}, nil
}

func (f *fakeTaskServer) ListTasks(_ context.Context, req *statewrightv1.ListTasksRequest) (*statewrightv1.ListTasksResponse, error) {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	var matching []*statewrightv1.Task
	for _, t := range s.tasks {
		if req.GetWorkflow() == "" || t.GetWorkflow() == req.GetWorkflow() {
			listed := proto.Clone(t).(*statewrightv1.Task)
			listed.LeaseToken = ""
			matching = append(matching, listed)
		}
	}
	if s.extraTask && len(matching) > 0 {
		matching = append(matching, matching[0])
	}
	offset := 0
	if req.GetPageToken() != "" {
		var err error
		if offset, err = strconv.Atoi(req.GetPageToken()); err != nil || offset > len(matching) {
			return nil, statusError(codes.InvalidArgument, "INVALID_PAGE_TOKEN", nil)
		}
	}
	end := min(offset+fakeTaskPageSize, len(matching))
	resp := &statewrightv1.ListTasksResponse{Tasks: matching[offset:end]}
	if end < len(matching) {
		resp.NextPageToken = strconv.Itoa(end)
	}
	return resp, nil
}
