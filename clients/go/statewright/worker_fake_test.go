package statewright_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/statewright/statewright/clients/go/statewright"
	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// taskServer is an in-memory TaskService that leases, heartbeats and finishes tasks like
// the real one as far as a worker can tell: leases are fenced by token and expire, a
// cancelled task answers cancel_requested and TASK_CANCELLED. Scripted errors make it
// misbehave on purpose; every request is recorded.
type taskServer struct {
	statewrightv1.UnimplementedTaskServiceServer
	firstLease  time.Duration // the lease a poll grants; zero: a minute
	extension   time.Duration // the lease a heartbeat grants; zero: a minute
	concurrency int           // when set, a poll asking for more than the worker's free slots is a violation
	overDeliver int           // a poll hands out this many tasks beyond max_tasks

	mu           sync.Mutex
	wake         chan struct{} // closed and replaced on every change
	scheduled    []*statewrightv1.Task
	leases       map[string]*fakeLease
	cancelled    map[string]bool
	outstanding  int // leased and not finished
	violations   []string
	polls        []*statewrightv1.PollTasksRequest
	pollsWaiting int
	pollErrs     []error
	heartbeats   []*statewrightv1.HeartbeatTaskRequest
	heartbeatErr map[string]error
	completes    []*statewrightv1.CompleteTaskRequest
	completeErrs []error
	fails        []*statewrightv1.FailTaskRequest
	failErrs     []error
	accepted     []string // names of the tasks whose completion was applied
	nextTask     int
}

type fakeLease struct {
	token  string
	expiry time.Time
	done   bool
}

func newTaskServer() *taskServer {
	return &taskServer{
		wake:         make(chan struct{}),
		leases:       map[string]*fakeLease{},
		cancelled:    map[string]bool{},
		heartbeatErr: map[string]error{},
	}
}

// reasonError is a Statewright error: a status with one ErrorInfo.
func reasonError(code codes.Code, reason string) error {
	st, err := status.New(code, reason).WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: statewright.Domain})
	if err != nil {
		panic(err)
	}
	return st.Err()
}

// changed wakes waiting polls and anyone watching; the caller holds mu.
func (s *taskServer) changed() {
	close(s.wake)
	s.wake = make(chan struct{})
}

// add schedules task (its name, workflow, state and attempt filled in when unset) and
// returns its name.
func (s *taskServer) add(task *statewrightv1.Task) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextTask++
	if task.Name == "" {
		task.Name = fmt.Sprintf("workflows/wf-%d/tasks/t-%d", s.nextTask, s.nextTask)
	}
	if task.Workflow == "" {
		task.Workflow = fmt.Sprintf("workflows/wf-%d", s.nextTask)
	}
	if task.State == "" {
		task.State = "charge"
	}
	if task.Attempt == 0 {
		task.Attempt = 1
	}
	task.Status = statewrightv1.TaskStatus_TASK_STATUS_SCHEDULED
	s.scheduled = append(s.scheduled, task)
	s.changed()
	return task.Name
}

// schedule adds a task with input on queue and returns its name.
func (s *taskServer) schedule(t *testing.T, queue string, input map[string]any) string {
	t.Helper()
	st, err := structpb.NewStruct(input)
	if err != nil {
		t.Fatal(err)
	}
	return s.add(&statewrightv1.Task{Queue: queue, Input: st})
}

func orMinute(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return time.Minute
}

// take leases up to n scheduled tasks of queue; the caller holds mu.
func (s *taskServer) take(queue string, n int) []*statewrightv1.Task {
	var out, rest []*statewrightv1.Task
	for _, task := range s.scheduled {
		if task.GetQueue() != queue || len(out) == n {
			rest = append(rest, task)
			continue
		}
		leased := proto.Clone(task).(*statewrightv1.Task)
		lease := &fakeLease{token: fmt.Sprintf("lease-%s-%d", task.GetName(), task.GetAttempt()), expiry: time.Now().Add(orMinute(s.firstLease))}
		s.leases[task.GetName()] = lease
		leased.LeaseToken = lease.token
		leased.LeaseExpireTime = timestamppb.New(lease.expiry)
		leased.Status = statewrightv1.TaskStatus_TASK_STATUS_LEASED
		out = append(out, leased)
		s.outstanding++
	}
	s.scheduled = rest
	return out
}

// commit sends headers, so that gRPC's own retry policy (which replays a trailers-only
// UNAVAILABLE) stays out of the way and every scripted error reaches the worker.
func commit(ctx context.Context) {
	_ = grpc.SendHeader(ctx, metadata.MD{})
}

func popErr(errs *[]error) error {
	if len(*errs) == 0 {
		return nil
	}
	err := (*errs)[0]
	*errs = (*errs)[1:]
	return err
}

func (s *taskServer) PollTasks(ctx context.Context, req *statewrightv1.PollTasksRequest) (*statewrightv1.PollTasksResponse, error) {
	s.mu.Lock()
	s.polls = append(s.polls, proto.Clone(req).(*statewrightv1.PollTasksRequest))
	if asked := int(req.GetMaxTasks()); asked < 1 || (s.concurrency > 0 && asked > s.concurrency-s.outstanding) {
		s.violations = append(s.violations, fmt.Sprintf("poll asked for %d tasks with %d of %d leased", asked, s.outstanding, s.concurrency))
	}
	if err := popErr(&s.pollErrs); err != nil {
		s.changed()
		s.mu.Unlock()
		commit(ctx)
		return nil, err
	}
	timer := time.NewTimer(req.GetWait().AsDuration())
	defer timer.Stop()
	s.pollsWaiting++
	s.changed()
	defer func() {
		s.pollsWaiting--
		s.changed()
		s.mu.Unlock()
	}()
	for {
		if tasks := s.take(req.GetQueue(), int(req.GetMaxTasks())+s.overDeliver); len(tasks) > 0 {
			return &statewrightv1.PollTasksResponse{Tasks: tasks}, nil
		}
		wake := s.wake
		s.mu.Unlock()
		select {
		case <-wake:
			s.mu.Lock()
		case <-ctx.Done():
			s.mu.Lock()
			return nil, status.FromContextError(ctx.Err()).Err()
		case <-timer.C:
			s.mu.Lock()
			return &statewrightv1.PollTasksResponse{}, nil
		}
	}
}

// checkLease fences a call by its lease; the caller holds mu.
func (s *taskServer) checkLease(name, token string) error {
	lease, ok := s.leases[name]
	if !ok {
		return reasonError(codes.NotFound, "TASK_NOT_FOUND")
	}
	if lease.done || lease.token != token || time.Now().After(lease.expiry) {
		return reasonError(codes.FailedPrecondition, "LEASE_SUPERSEDED")
	}
	return nil
}

func (s *taskServer) finish(name string) {
	s.leases[name].done = true
	s.outstanding--
}

func (s *taskServer) HeartbeatTask(ctx context.Context, req *statewrightv1.HeartbeatTaskRequest) (*statewrightv1.HeartbeatTaskResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.heartbeats = append(s.heartbeats, proto.Clone(req).(*statewrightv1.HeartbeatTaskRequest))
	s.changed()
	if err := s.heartbeatErr[req.GetName()]; err != nil {
		return nil, err
	}
	if err := s.checkLease(req.GetName(), req.GetLeaseToken()); err != nil {
		return nil, err
	}
	lease := s.leases[req.GetName()]
	lease.expiry = time.Now().Add(orMinute(s.extension))
	return &statewrightv1.HeartbeatTaskResponse{
		LeaseExpireTime: timestamppb.New(lease.expiry),
		CancelRequested: s.cancelled[req.GetName()],
	}, nil
}

func (s *taskServer) CompleteTask(ctx context.Context, req *statewrightv1.CompleteTaskRequest) (*statewrightv1.CompleteTaskResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.completes = append(s.completes, proto.Clone(req).(*statewrightv1.CompleteTaskRequest))
	s.changed()
	if err := popErr(&s.completeErrs); err != nil {
		commit(ctx)
		return nil, err
	}
	if err := s.checkLease(req.GetName(), req.GetLeaseToken()); err != nil {
		return nil, err
	}
	if s.cancelled[req.GetName()] {
		return nil, reasonError(codes.FailedPrecondition, "TASK_CANCELLED")
	}
	s.finish(req.GetName())
	s.accepted = append(s.accepted, req.GetName())
	return &statewrightv1.CompleteTaskResponse{
		Task: &statewrightv1.Task{Name: req.GetName(), Status: statewrightv1.TaskStatus_TASK_STATUS_COMPLETED},
	}, nil
}

func (s *taskServer) FailTask(ctx context.Context, req *statewrightv1.FailTaskRequest) (*statewrightv1.FailTaskResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails = append(s.fails, proto.Clone(req).(*statewrightv1.FailTaskRequest))
	s.changed()
	if err := popErr(&s.failErrs); err != nil {
		commit(ctx)
		return nil, err
	}
	if err := s.checkLease(req.GetName(), req.GetLeaseToken()); err != nil {
		return nil, err
	}
	if s.cancelled[req.GetName()] {
		return nil, reasonError(codes.FailedPrecondition, "TASK_CANCELLED")
	}
	s.finish(req.GetName())
	return &statewrightv1.FailTaskResponse{
		Task: &statewrightv1.Task{Name: req.GetName(), Status: statewrightv1.TaskStatus_TASK_STATUS_BACKOFF},
	}, nil
}

// read runs f under the lock, for a consistent look at the records.
func (s *taskServer) read(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

func (s *taskServer) heartbeatsOf(name string) []*statewrightv1.HeartbeatTaskRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*statewrightv1.HeartbeatTaskRequest
	for _, hb := range s.heartbeats {
		if hb.GetName() == name {
			out = append(out, hb)
		}
	}
	return out
}

func newTaskClient(t *testing.T, srv statewrightv1.TaskServiceServer) *statewright.Client {
	t.Helper()
	return newBufconnClient(t, func(gs *grpc.Server) { statewrightv1.RegisterTaskServiceServer(gs, srv) })
}

// runningWorker is a Worker.Run in progress; stop ends it and waits for Run's return.
type runningWorker struct {
	cancel  context.CancelFunc
	done    chan error
	stopped bool
	err     error
}

func runWorker(t *testing.T, w *statewright.Worker) *runningWorker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	rw := &runningWorker{cancel: cancel, done: make(chan error, 1)}
	go func() { rw.done <- w.Run(ctx) }()
	t.Cleanup(func() { rw.stop(t) })
	return rw
}

func (rw *runningWorker) stop(t *testing.T) error {
	t.Helper()
	rw.cancel()
	if !rw.stopped {
		select {
		case rw.err = <-rw.done:
			rw.stopped = true
		case <-time.After(20 * time.Second):
			t.Fatal("Worker.Run did not return after its context ended")
		}
	}
	return rw.err
}

// eventually waits, a bounded while, for cond; it fails the test if cond never holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitIn is eventually for a handler: it returns false when ctx ends or cond never holds.
func waitIn(ctx context.Context, cond func() bool) bool {
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if ctx.Err() != nil || time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// logRecorder keeps every record the worker logs.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
	return nil
}

func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// durations lists the key attribute of every record with message msg, in order.
func (l *logRecorder) durations(msg, key string) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []time.Duration
	for _, r := range l.records {
		if r.Message != msg {
			continue
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == key {
				out = append(out, a.Value.Duration())
			}
			return true
		})
	}
	return out
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }
