package statewright_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/statewright/statewright/clients/go/statewright"
	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

func TestWorkerCompletesATask(t *testing.T) {
	srv := newTaskServer()
	name := srv.schedule(t, "payments", map[string]any{"order": "o-1", "amount": 12})
	w := statewright.NewWorker(newTaskClient(t, srv), statewright.WorkerOptions{Concurrency: 4, Identity: "test-worker", Logger: quiet()})
	var seen statewright.Task
	w.Register("payments", func(_ context.Context, task *statewright.Task) (map[string]any, error) {
		seen = *task
		return map[string]any{"id": "ch-" + task.Input["order"].(string)}, nil
	})
	rw := runWorker(t, w)
	eventually(t, "the completion", func() bool {
		var n int
		srv.read(func() { n = len(srv.accepted) })
		return n == 1
	})
	if err := rw.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}

	if seen.Name != name || seen.Workflow != "workflows/wf-1" || seen.Queue != "payments" || seen.State != "charge" || seen.Attempt != 1 {
		t.Errorf("handler saw %+v", seen)
	}
	if seen.Input["amount"] != 12.0 || seen.HeartbeatDetails != nil {
		t.Errorf("input = %v, heartbeat details = %v; want the amount as a float64 and no details", seen.Input, seen.HeartbeatDetails)
	}
	srv.read(func() {
		if len(srv.completes) != 1 || len(srv.fails) != 0 {
			t.Fatalf("%d completions and %d failures, want one and none", len(srv.completes), len(srv.fails))
		}
		c := srv.completes[0]
		if c.GetName() != name || c.GetLeaseToken() != srv.leases[name].token || c.GetRequestId() != name+"#1#complete" {
			t.Errorf("CompleteTask(%q, %q, request %q)", c.GetName(), c.GetLeaseToken(), c.GetRequestId())
		}
		if got := c.GetResult().AsMap(); got["id"] != "ch-o-1" || len(got) != 1 {
			t.Errorf("result = %v", got)
		}
		p := srv.polls[0]
		if p.GetQueue() != "payments" || p.GetIdentity() != "test-worker" || p.GetMaxTasks() != 4 || p.GetWait().AsDuration() != statewright.DefaultPollWait {
			t.Errorf("first poll = %v, want payments, test-worker, 4 tasks, the default wait", p)
		}
		if p.GetMaxBytes() != statewright.DefaultMaxReceiveBytes {
			t.Errorf("first poll's max_bytes = %d, want the receive limit %d", p.GetMaxBytes(), statewright.DefaultMaxReceiveBytes)
		}
	})
}

// HTTPError is an error type of the handler's own: its name becomes the failure's type.
type HTTPError struct{ Code int }

func (e *HTTPError) Error() string { return fmt.Sprintf("HTTP %d", e.Code) }

func TestWorkerFailsATaskWithTheHandlersError(t *testing.T) {
	pathErr := &fs.PathError{Op: "open", Path: "/cards", Err: fs.ErrNotExist}
	cases := []struct {
		name         string
		err          error
		result       map[string]any
		panics       bool
		typ, message string
		details      map[string]any
		nonRetryable bool
		retryDelay   time.Duration
		closeUntil   time.Time
	}{
		{name: "plain error", err: errors.New("boom"), typ: "ERROR", message: "boom"},
		{name: "wrapped typed error", err: fmt.Errorf("reading: %w", pathErr), typ: "PATH_ERROR", message: "reading: open /cards: file does not exist"},
		{name: "own error type", err: &HTTPError{Code: 502}, typ: "HTTP_ERROR", message: "HTTP 502"},
		{
			name: "non-retryable TaskFailure",
			err:  statewright.TaskFailure{Type: "CARD_DECLINED", Message: "over the limit", Details: map[string]any{"amount": 1200}, NonRetryable: true},
			typ:  "CARD_DECLINED", message: "over the limit", details: map[string]any{"amount": 1200.0}, nonRetryable: true,
		},
		{
			name: "wrapped *TaskFailure with a retry delay",
			err:  fmt.Errorf("charging: %w", &statewright.TaskFailure{Type: "RATE_LIMITED", RetryDelay: 3 * time.Second}),
			typ:  "RATE_LIMITED", retryDelay: 3 * time.Second,
		},
		{
			name: "TaskFailure closing its key",
			err:  statewright.TaskFailure{Type: "RATE_LIMITED", CloseKeyUntil: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)},
			typ:  "RATE_LIMITED", closeUntil: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC),
		},
		{
			name: "TaskFailure without a type, details needing JSON",
			err:  statewright.TaskFailure{Message: "bad", Details: map[string]any{"codes": []string{"a", "b"}}},
			typ:  "ERROR", message: "bad", details: map[string]any{"codes": []any{"a", "b"}},
		},
		{name: "panic", panics: true, typ: "PANIC", message: "handler panicked: card reader on fire"},
		{
			name: "result that cannot be encoded", result: map[string]any{"reply": make(chan int)},
			typ: "INVALID_RESULT", message: "the result cannot be encoded as a Struct: json: unsupported type: chan int",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newTaskServer()
			name := srv.schedule(t, "payments", map[string]any{"order": "o-1"})
			w := statewright.NewWorker(newTaskClient(t, srv), statewright.WorkerOptions{Logger: quiet()})
			w.Register("payments", func(context.Context, *statewright.Task) (map[string]any, error) {
				if tc.panics {
					panic("card reader on fire")
				}
				if tc.result != nil {
					return tc.result, nil
				}
				return map[string]any{"unused": true}, tc.err
			})
			rw := runWorker(t, w)
			eventually(t, "the failure", func() bool {
				var n int
				srv.read(func() { n = len(srv.fails) })
				return n == 1
			})
			if err := rw.stop(t); err != nil {
				t.Fatalf("Run: %v", err)
			}
			srv.read(func() {
				if len(srv.fails) != 1 || len(srv.completes) != 0 {
					t.Fatalf("%d failures and %d completions, want one and none", len(srv.fails), len(srv.completes))
				}
				f := srv.fails[0]
				if f.GetName() != name || f.GetLeaseToken() != srv.leases[name].token || f.GetRequestId() != name+"#1#fail" {
					t.Errorf("FailTask(%q, %q, request %q)", f.GetName(), f.GetLeaseToken(), f.GetRequestId())
				}
				if f.GetError().GetType() != tc.typ || f.GetError().GetMessage() != tc.message {
					t.Errorf("error = %q %q, want %q %q", f.GetError().GetType(), f.GetError().GetMessage(), tc.typ, tc.message)
				}
				if tc.details == nil && f.GetError().GetDetails() != nil {
					t.Errorf("details = %v, want none", f.GetError().GetDetails().AsMap())
				}
				if tc.details != nil && fmt.Sprint(f.GetError().GetDetails().AsMap()) != fmt.Sprint(tc.details) {
					t.Errorf("details = %v, want %v", f.GetError().GetDetails().AsMap(), tc.details)
				}
				if f.GetNonRetryable() != tc.nonRetryable {
					t.Errorf("non_retryable = %v, want %v", f.GetNonRetryable(), tc.nonRetryable)
				}
				switch {
				case tc.closeUntil.IsZero() && f.GetCloseKeyUntil() != nil:
					t.Errorf("close_key_until = %v, want it unset", f.GetCloseKeyUntil().AsTime())
				case !tc.closeUntil.IsZero() && !f.GetCloseKeyUntil().AsTime().Equal(tc.closeUntil):
					t.Errorf("close_key_until = %v, want %v", f.GetCloseKeyUntil().AsTime(), tc.closeUntil)
				}
				switch {
				case tc.retryDelay == 0 && f.GetRetryDelay() != nil:
					t.Errorf("retry_delay = %v, want it unset (the policy's backoff)", f.GetRetryDelay().AsDuration())
				case tc.retryDelay != 0 && f.GetRetryDelay().AsDuration() != tc.retryDelay:
					t.Errorf("retry_delay = %v, want %v", f.GetRetryDelay().AsDuration(), tc.retryDelay)
				}
			})
		})
	}
}

func TestWorkerHeartbeatsExtendTheLease(t *testing.T) {
	// Every lease, the first one too, lapses after 900 ms unless a heartbeat extends it;
	// the fake refuses a call on a lapsed lease, which would cancel the handler.
	srv := newTaskServer()
	srv.firstLease, srv.extension = 900*time.Millisecond, 900*time.Millisecond
	name := srv.schedule(t, "payments", map[string]any{})
	w := statewright.NewWorker(newTaskClient(t, srv), statewright.WorkerOptions{Logger: quiet()})
	w.Register("payments", func(ctx context.Context, task *statewright.Task) (map[string]any, error) {
		if !waitIn(ctx, func() bool { return len(srv.heartbeatsOf(task.Name)) >= 3 }) {
			return nil, fmt.Errorf("three heartbeats never came: %w", context.Cause(ctx))
		}
		return map[string]any{"ok": true}, nil
	})
	rw := runWorker(t, w)
	eventually(t, "a completion or failure", func() bool {
		var n int
		srv.read(func() { n = len(srv.completes) + len(srv.fails) })
		return n > 0
	})
	if err := rw.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	srv.read(func() {
		if len(srv.fails) != 0 {
			t.Fatalf("the task failed: %v", srv.fails[0].GetError())
		}
		if !slices.Equal(srv.accepted, []string{name}) {
			t.Fatalf("completions applied = %v, want the task's (the lease held throughout)", srv.accepted)
		}
	})
	for _, hb := range srv.heartbeatsOf(name) {
		if hb.GetLeaseToken() != "lease-"+name+"-1" || hb.GetDetails() != nil {
			t.Errorf("heartbeat with lease %q and details %v", hb.GetLeaseToken(), hb.GetDetails())
		}
	}
}

func TestWorkerHeartbeatsFollowTheExtendedLeaseAndCarryDetails(t *testing.T) {
	// A short first lease, then an hour: one automatic heartbeat extends it, and none
	// other is due for twenty minutes.
	srv := newTaskServer()
	srv.firstLease, srv.extension = 300*time.Millisecond, time.Hour
	previous, err := structpb.NewStruct(map[string]any{"charged": 1})
	if err != nil {
		t.Fatal(err)
	}
	name := srv.add(&statewrightv1.Task{Queue: "payments", Attempt: 2, HeartbeatDetails: previous})
	w := statewright.NewWorker(newTaskClient(t, srv), statewright.WorkerOptions{Logger: quiet()})
	var seen statewright.Task
	var heartbeatErr error
	w.Register("payments", func(ctx context.Context, task *statewright.Task) (map[string]any, error) {
		seen = *task
		if !waitIn(ctx, func() bool { return len(srv.heartbeatsOf(task.Name)) >= 1 }) {
			return nil, errors.New("no automatic heartbeat")
		}
		heartbeatErr = task.Heartbeat(ctx, map[string]any{"charged": 2})
		return map[string]any{}, nil
	})
	rw := runWorker(t, w)
	eventually(t, "the completion", func() bool {
		var n int
		srv.read(func() { n = len(srv.accepted) })
		return n == 1
	})
	if err := rw.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if heartbeatErr != nil {
		t.Fatalf("Heartbeat: %v", heartbeatErr)
	}
	if seen.Attempt != 2 || seen.HeartbeatDetails["charged"] != 1.0 {
		t.Errorf("handler saw attempt %d and heartbeat details %v", seen.Attempt, seen.HeartbeatDetails)
	}
	hbs := srv.heartbeatsOf(name)
	if len(hbs) != 2 {
		t.Fatalf("%d heartbeats, want the automatic one and the handler's", len(hbs))
	}
	if hbs[0].GetDetails() != nil || hbs[1].GetDetails().AsMap()["charged"] != 2.0 {
		t.Errorf("heartbeat details = %v then %v, want none then the handler's", hbs[0].GetDetails(), hbs[1].GetDetails())
	}
	srv.read(func() {
		if got := srv.completes[0].GetRequestId(); got != name+"#2#complete" {
			t.Errorf("request id = %q, want the attempt's", got)
		}
	})
}

func TestWorkerCancelRequestedReachesTheHandler(t *testing.T) {
	t.Run("automatic heartbeat", func(t *testing.T) {
		srv := newTaskServer()
		srv.firstLease = 300 * time.Millisecond
		name := srv.schedule(t, "payments", map[string]any{})
		srv.cancelled[name] = true
		w := statewright.NewWorker(newTaskClient(t, srv), statewright.WorkerOptions{Logger: quiet()})
		causes := make(chan error, 1)
		w.Register("payments", func(ctx context.Context, _ *statewright.Task) (map[string]any, error) {
			select {
			case <-ctx.Done():
				causes <- context.Cause(ctx)
			case <-time.After(10 * time.Second):
				causes <- errors.New("the handler's context never ended")
			}
			return map[string]any{"too": "late"}, nil
		})
		rw := runWorker(t, w)
		if cause := <-causes; !errors.Is(cause, statewright.ErrTaskCancelled) {
			t.Fatalf("cause = %v, want ErrTaskCancelled", cause)
		}
		if err := rw.stop(t); err != nil {
			t.Fatalf("Run: %v", err)
		}
		srv.read(func() {
			if len(srv.completes) != 0 || len(srv.fails) != 0 {
				t.Errorf("%d completions and %d failures sent for a cancelled task, want none", len(srv.completes), len(srv.fails))
			}
		})
	})
	t.Run("handler's heartbeat", func(t *testing.T) {
		srv := newTaskServer()
		name := srv.schedule(t, "payments", map[string]any{})
		srv.cancelled[name] = true
		w := statewright.NewWorker(newTaskClient(t, srv), statewright.WorkerOptions{Logger: quiet()})
		results := make(chan [2]error, 1)
		w.Register("payments", func(ctx context.Context, task *statewright.Task) (map[string]any, error) {
			err := task.Heartbeat(ctx, map[string]any{"step": 1})
			results <- [2]error{err, context.Cause(ctx)}
			return nil, errors.New("stopped")
		})
		rw := runWorker(t, w)
		got := <-results
		if !errors.Is(got[0], statewright.ErrTaskCancelled) || !errors.Is(got[1], statewright.ErrTaskCancelled) {
			t.Fatalf("Heartbeat = %v with the context's cause %v, want ErrTaskCancelled twice", got[0], got[1])
		}
		if err := rw.stop(t); err != nil {
			t.Fatalf("Run: %v", err)
		}
		srv.read(func() {
			if len(srv.completes) != 0 || len(srv.fails) != 0 {
				t.Errorf("%d completions and %d failures sent for a cancelled task, want none", len(srv.completes), len(srv.fails))
			}
		})
	})
}

func TestWorkerDropsTasksItNoLongerHolds(t *testing.T) {
	t.Run("completion LEASE_SUPERSEDED", func(t *testing.T) {
		srv := newTaskServer()
		srv.completeErrs = []error{reasonError(codes.FailedPrecondition, "LEASE_SUPERSEDED")}
		first := srv.schedule(t, "payments", map[string]any{})
		second := srv.schedule(t, "payments", map[string]any{})
		w := statewright.NewWorker(newTaskClient(t, srv), statewright.WorkerOptions{Concurrency: 1, Logger: quiet()})
		w.Register("payments", func(context.Context, *statewright.Task) (map[string]any, error) {
			return map[string]any{"ok": true}, nil
		})
		rw := runWorker(t, w)
		eventually(t, "the second task's completion", func() bool {
			var n int
			srv.read(func() { n = len(srv.accepted) })
			return n == 1
		})
		if err := rw.stop(t); err != nil {
			t.Fatalf("Run: %v", err)
		}
		srv.read(func() {
			var names []string
			for _, c := range srv.completes {
				names = append(names, c.GetName())
			}
			if !slices.Equal(names, []string{first, second}) || len(srv.fails) != 0 {
				t.Errorf("completions %v and %d failures, want one each for %s and %s, no failure", names, len(srv.fails), first, second)
			}
		})
	})
	t.Run("failure TASK_CANCELLED", func(t *testing.T) {
		srv := newTaskServer()
		srv.failErrs = []error{reasonError(codes.FailedPrecondition, "TASK_CANCELLED")}
		first := srv.schedule(t, "payments", map[string]any{"fail": true})
		srv.schedule(t, "payments", map[string]any{})
		w := statewright.NewWorker(newTaskClient(t, srv), statewright.WorkerOptions{Concurrency: 1, Logger: quiet()})
		w.Register("payments", func(_ context.Context, task *statewright.Task) (map[string]any, error) {
			if task.Input["fail"] == true {
				return nil, errors.New("declined")
			}
			return map[string]any{"ok": true}, nil
		})
		rw := runWorker(t, w)
		eventually(t, "the second task's completion", func() bool {
			var n int
			srv.read(func() { n = len(srv.accepted) })
			return n == 1
		})
		if err := rw.stop(t); err != nil {
			t.Fatalf("Run: %v", err)
		}
		srv.read(func() {
			if len(srv.fails) != 1 || srv.fails[0].GetName() != first || len(srv.completes) != 1 {
				t.Errorf("%d failures and %d completions, want the first task's failure once, not retried", len(srv.fails), len(srv.completes))
			}
		})
	})
	t.Run("heartbeat LEASE_SUPERSEDED", func(t *testing.T) {
		srv := newTaskServer()
		srv.firstLease = 300 * time.Millisecond
		name := srv.schedule(t, "payments", map[string]any{})
		srv.heartbeatErr[name] = reasonError(codes.FailedPrecondition, "LEASE_SUPERSEDED")
		w := statewright.NewWorker(newTaskClient(t, srv), statewright.WorkerOptions{Logger: quiet()})
		causes := make(chan error, 1)
		w.Register("payments", func(ctx context.Context, _ *statewright.Task) (map[string]any, error) {
			select {
			case <-ctx.Done():
				causes <- context.Cause(ctx)
			case <-time.After(10 * time.Second):
				causes <- errors.New("the handler's context never ended")
			}
			return map[string]any{"too": "late"}, nil
		})
		rw := runWorker(t, w)
		if cause := <-causes; !errors.Is(cause, statewright.ErrLeaseLost) {
			t.Fatalf("cause = %v, want ErrLeaseLost", cause)
		}
		if err := rw.stop(t); err != nil {
			t.Fatalf("Run: %v", err)
		}
		srv.read(func() {
			if len(srv.completes) != 0 || len(srv.fails) != 0 || len(srv.heartbeats) != 1 {
				t.Errorf("%d completions, %d failures, %d heartbeats; want none, none, one", len(srv.completes), len(srv.fails), len(srv.heartbeats))
			}
		})
	})
}

func TestWorkerLeasesNoMoreThanItCanStart(t *testing.T) {
	srv := newTaskServer()
	srv.concurrency = 3
	srv.schedule(t, "payments", map[string]any{})
	srv.schedule(t, "payments", map[string]any{})
	w := statewright.NewWorker(newTaskClient(t, srv), statewright.WorkerOptions{Concurrency: 3, Logger: quiet()})
	var running, most atomic.Int32
	gate := make(chan struct{})
	w.Register("payments", func(ctx context.Context, _ *statewright.Task) (map[string]any, error) {
		now := running.Add(1)
		defer running.Add(-1)
		for {
			if m := most.Load(); now <= m || most.CompareAndSwap(m, now) {
				break
			}
		}
		select {
		case <-gate:
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
		}
		return map[string]any{}, nil
	})
	rw := runWorker(t, w)
	maxTasks := func() []int32 {
		var out []int32
		srv.read(func() {
			for _, p := range srv.polls {
				out = append(out, p.GetMaxTasks())
			}
		})
		return out
	}
	waiting := func() int {
		var n int
		srv.read(func() { n = srv.pollsWaiting })
		return n
	}

	eventually(t, "two handlers running and the next poll waiting", func() bool { return running.Load() == 2 && waiting() == 1 })
	if got := maxTasks(); !slices.Equal(got, []int32{3, 1}) {
		t.Fatalf("max_tasks per poll = %v, want 3 then the one free slot", got)
	}
	for range 3 {
		srv.schedule(t, "payments", map[string]any{})
	}
	eventually(t, "three handlers running", func() bool { return running.Load() == 3 })
	gate <- struct{}{}
	eventually(t, "a poll for the freed slot to take a task", func() bool {
		var leftover int
		srv.read(func() { leftover = len(srv.scheduled) })
		return leftover == 1 && running.Load() == 3
	})
	if got := maxTasks(); !slices.Equal(got, []int32{3, 1, 1}) {
		t.Fatalf("max_tasks per poll = %v, want no poll while every slot was busy, then one for the freed slot", got)
	}
	close(gate)
	eventually(t, "all five completions", func() bool {
		var n int
		srv.read(func() { n = len(srv.accepted) })
		return n == 5
	})
	if err := rw.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if most.Load() != 3 {
		t.Errorf("at most %d handlers ran at once, want 3", most.Load())
	}
	srv.read(func() {
		if len(srv.violations) != 0 {
			t.Errorf("polls asked for more than the free slots: %v", srv.violations)
		}
	})
}

func TestWorkerHandsBackTasksBeyondWhatItAskedFor(t *testing.T) {
	srv := newTaskServer()
	srv.overDeliver = 1
	srv.schedule(t, "payments", map[string]any{})
	srv.schedule(t, "payments", map[string]any{})
	w := statewright.NewWorker(newTaskClient(t, srv), statewright.WorkerOptions{Concurrency: 1, Logger: quiet()})
	w.Register("payments", func(context.Context, *statewright.Task) (map[string]any, error) {
		return map[string]any{}, nil
	})
	rw := runWorker(t, w)
	eventually(t, "one completion and one release", func() bool {
		var n int
		srv.read(func() { n = len(srv.accepted) + len(srv.fails) })
		return n == 2
	})
	if err := rw.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	srv.read(func() {
		if len(srv.accepted) != 1 || len(srv.fails) != 1 {
			t.Fatalf("%d completions and %d failures, want one of each", len(srv.accepted), len(srv.fails))
		}
		f := srv.fails[0]
		if f.GetError().GetType() != "WORKER_BUSY" || f.GetRetryDelay() == nil || f.GetRetryDelay().AsDuration() != 0 || f.GetNonRetryable() {
			t.Errorf("release = %v, want WORKER_BUSY, retryable at once", f)
		}
	})
}

func TestWorkerShutdownLetsRunningHandlersFinish(t *testing.T) {
	srv := newTaskServer()
	name := srv.schedule(t, "payments", map[string]any{})
	w := statewright.NewWorker(newTaskClient(t, srv), statewright.WorkerOptions{ShutdownGrace: time.Minute, Logger: quiet()})
	started, finish := make(chan struct{}), make(chan struct{})
	var liveAtFinish atomic.Bool
	w.Register("payments", func(ctx context.Context, _ *statewright.Task) (map[string]any, error) {
		close(started)
		select {
		case <-finish:
		case <-time.After(10 * time.Second):
		}
		liveAtFinish.Store(ctx.Err() == nil)
		return map[string]any{"done": true}, nil
	})
	rw := runWorker(t, w)
	<-started
	var polls int
	eventually(t, "the next poll waiting", func() bool {
		var waiting int
		srv.read(func() { waiting, polls = srv.pollsWaiting, len(srv.polls) })
		return waiting == 1
	})
	rw.cancel()
	eventually(t, "the waiting poll abandoned", func() bool {
		var waiting int
		srv.read(func() { waiting = srv.pollsWaiting })
		return waiting == 0
	})
	select {
	case err := <-rw.done:
		t.Fatalf("Run returned (%v) while a handler was still running within the grace period", err)
	default:
	}
	close(finish)
	if err := rw.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !liveAtFinish.Load() {
		t.Error("the handler's context ended when the shutdown began; it should last the grace period")
	}
	srv.read(func() {
		if !slices.Equal(srv.accepted, []string{name}) || len(srv.fails) != 0 {
			t.Errorf("completions %v and %d failures, want the task completed", srv.accepted, len(srv.fails))
		}
		if len(srv.polls) != polls {
			t.Errorf("%d polls after the shutdown began, want none", len(srv.polls)-polls)
		}
	})
}

func TestWorkerShutdownReleasesTasksStillRunning(t *testing.T) {
	srv := newTaskServer()
	cooperative := srv.schedule(t, "payments", map[string]any{"kind": "cooperative"})
	stubborn := srv.schedule(t, "payments", map[string]any{"kind": "stubborn"})
	w := statewright.NewWorker(newTaskClient(t, srv), statewright.WorkerOptions{Concurrency: 2, ShutdownGrace: 50 * time.Millisecond, Logger: quiet()})
	var started sync.WaitGroup
	started.Add(2)
	causes := make(chan error, 1)
	// The stubborn handler ignores its context; Run must not wait for it.
	unblock := make(chan struct{})
	t.Cleanup(func() { close(unblock) })
	w.Register("payments", func(ctx context.Context, task *statewright.Task) (map[string]any, error) {
		started.Done()
		if task.Input["kind"] == "stubborn" {
			<-unblock
			return map[string]any{"too": "late"}, nil
		}
		select {
		case <-ctx.Done():
			causes <- context.Cause(ctx)
		case <-time.After(10 * time.Second):
			causes <- errors.New("the handler's context never ended")
		}
		return map[string]any{"too": "late"}, nil
	})
	rw := runWorker(t, w)
	started.Wait()
	if err := rw.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if cause := <-causes; !errors.Is(cause, statewright.ErrWorkerShutdown) {
		t.Errorf("cause = %v, want ErrWorkerShutdown", cause)
	}
	srv.read(func() {
		if len(srv.completes) != 0 || len(srv.fails) != 2 {
			t.Fatalf("%d completions and %d failures, want both tasks released", len(srv.completes), len(srv.fails))
		}
		var names []string
		for _, f := range srv.fails {
			names = append(names, f.GetName())
			if f.GetError().GetType() != "WORKER_SHUTDOWN" || f.GetRetryDelay() == nil || f.GetRetryDelay().AsDuration() != 0 ||
				f.GetNonRetryable() || f.GetRequestId() != f.GetName()+"#1#fail" {
				t.Errorf("release = %v, want WORKER_SHUTDOWN, retryable at once, the attempt's request id", f)
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{cooperative, stubborn}) {
			t.Errorf("released %v, want %s and %s", names, cooperative, stubborn)
		}
	})
}

func TestWorkerBacksOffWhileTheServerIsUnavailable(t *testing.T) {
	srv := newTaskServer()
	unavailable := status.Error(codes.Unavailable, "replica gone")
	srv.pollErrs = []error{unavailable, unavailable, status.Error(codes.DeadlineExceeded, "slow"), unavailable, unavailable}
	srv.completeErrs = []error{unavailable, unavailable}
	first := srv.schedule(t, "payments", map[string]any{})
	logs := &logRecorder{}
	w := statewright.NewWorker(newTaskClient(t, srv), statewright.WorkerOptions{
		InitialBackoff: time.Millisecond, MaxBackoff: 8 * time.Millisecond, Logger: slog.New(logs),
	})
	w.Register("payments", func(context.Context, *statewright.Task) (map[string]any, error) {
		return map[string]any{}, nil
	})
	rw := runWorker(t, w)
	eventually(t, "the first completion", func() bool {
		var n int
		srv.read(func() { n = len(srv.accepted) })
		return n == 1
	})
	eventually(t, "the next poll waiting", func() bool {
		var n int
		srv.read(func() { n = srv.pollsWaiting })
		return n == 1
	})
	// One more outage, after a success: the backoff starts over.
	srv.read(func() { srv.pollErrs = []error{unavailable} })
	srv.schedule(t, "payments", map[string]any{})
	eventually(t, "the second completion", func() bool {
		var n int
		srv.read(func() { n = len(srv.accepted) })
		return n == 2
	})
	if err := rw.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}

	delays := logs.durations("statewright worker: poll failed", "retry_in")
	if len(delays) != 6 {
		t.Fatalf("%d poll backoffs logged (%v), want 6", len(delays), delays)
	}
	// Exponential with equal jitter: the i-th wait is between half of and the whole step,
	// 1ms doubled per failure up to 8ms, and back to 1ms after a success.
	steps := []time.Duration{1, 2, 4, 8, 8, 1}
	for i, d := range delays {
		step := steps[i] * time.Millisecond
		if d < step/2 || d > step {
			t.Errorf("backoffs %v: the %d-th is outside [%v, %v]", delays, i+1, step/2, step)
		}
	}
	srv.read(func() {
		var ids []string
		for _, c := range srv.completes {
			if c.GetName() == first {
				ids = append(ids, c.GetRequestId())
			}
		}
		if !slices.Equal(ids, []string{first + "#1#complete", first + "#1#complete", first + "#1#complete"}) {
			t.Errorf("completions of the first task: %v, want three with the same request id", ids)
		}
	})
	if got := len(logs.durations("statewright worker: CompleteTask failed", "retry_in")); got != 2 {
		t.Errorf("%d completion backoffs logged, want 2", got)
	}
}

func TestWorkerWaitsAsLongAsARateLimitSays(t *testing.T) {
	srv := newTaskServer()
	limited := rateLimited(t, 30*time.Millisecond)
	srv.pollErrs = []error{limited}
	// A completion refused for the rate is tried again, not dropped: the result would be lost.
	srv.completeErrs = []error{limited}
	name := srv.schedule(t, "payments", map[string]any{})
	logs := &logRecorder{}
	w := statewright.NewWorker(newTaskClient(t, srv), statewright.WorkerOptions{
		InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, Logger: slog.New(logs),
	})
	w.Register("payments", func(context.Context, *statewright.Task) (map[string]any, error) {
		return map[string]any{"ok": true}, nil
	})
	rw := runWorker(t, w)
	eventually(t, "the completion", func() bool {
		var n int
		srv.read(func() { n = len(srv.accepted) })
		return n == 1
	})
	if err := rw.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, msg := range []string{"statewright worker: poll failed", "statewright worker: CompleteTask failed"} {
		delays := logs.durations(msg, "retry_in")
		if len(delays) != 1 || delays[0] < 30*time.Millisecond {
			t.Errorf("%q waits %v, want one of at least the RetryInfo's 30ms (the backoff alone is 1ms)", msg, delays)
		}
	}
	srv.read(func() {
		if len(srv.completes) != 2 || srv.completes[1].GetName() != name || srv.accepted[0] != name {
			t.Errorf("completions %v, accepted %v", srv.completes, srv.accepted)
		}
	})
}

func TestWorkerKeepsPollingWhileNoServerListens(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := lis.Addr().String()
	if err := lis.Close(); err != nil {
		t.Fatal(err)
	}
	client, err := statewright.NewClient(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	logs := &logRecorder{}
	w := statewright.NewWorker(client, statewright.WorkerOptions{InitialBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond, Logger: slog.New(logs)})
	w.Register("payments", func(context.Context, *statewright.Task) (map[string]any, error) { return nil, nil })
	rw := runWorker(t, w)
	eventually(t, "three failed polls", func() bool {
		return len(logs.durations("statewright worker: poll failed", "retry_in")) >= 3
	})
	if err := rw.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	for _, r := range logs.records {
		if r.Message != "statewright worker: poll failed" {
			continue
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "code" && a.Value.String() != codes.Unavailable.String() {
				t.Errorf("a poll failed with %s, want UNAVAILABLE (connection refused)", a.Value)
			}
			return true
		})
	}
}

func TestWorkerRunsEachQueuesHandler(t *testing.T) {
	srv := newTaskServer()
	srv.schedule(t, "payments", map[string]any{"order": "o-1"})
	srv.schedule(t, "shipping.eu", map[string]any{"order": "o-2"})
	w := statewright.NewWorker(newTaskClient(t, srv), statewright.WorkerOptions{Concurrency: 3, Logger: quiet()})
	w.Register("payments", func(_ context.Context, task *statewright.Task) (map[string]any, error) {
		return map[string]any{"charged": task.Input["order"]}, nil
	})
	w.Register("shipping.eu", func(_ context.Context, task *statewright.Task) (map[string]any, error) {
		return map[string]any{"shipped": task.Input["order"]}, nil
	})
	rw := runWorker(t, w)
	eventually(t, "both completions", func() bool {
		var n int
		srv.read(func() { n = len(srv.accepted) })
		return n == 2
	})
	if err := rw.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	identity := fmt.Sprintf("%d@%s", os.Getpid(), host)
	if w.Identity() != identity {
		t.Errorf("identity = %q, want %q", w.Identity(), identity)
	}
	srv.read(func() {
		results := map[string]string{}
		for _, c := range srv.completes {
			results[fmt.Sprint(c.GetResult().AsMap())] = c.GetName()
		}
		if len(results) != 2 || results["map[charged:o-1]"] == "" || results["map[shipped:o-2]"] == "" {
			t.Errorf("results = %v, want each queue's handler to have run", results)
		}
		for _, p := range srv.polls {
			// Three slots over two queues: a poll asks for at most two.
			if p.GetMaxTasks() < 1 || p.GetMaxTasks() > 2 || p.GetIdentity() != identity {
				t.Errorf("poll of %s for %d tasks as %q", p.GetQueue(), p.GetMaxTasks(), p.GetIdentity())
			}
		}
	})
}

func TestWorkerMisuse(t *testing.T) {
	w := statewright.NewWorker(newTaskClient(t, newTaskServer()), statewright.WorkerOptions{Logger: quiet()})
	if err := w.Run(context.Background()); err == nil {
		t.Error("Run with no handler: no error")
	}
	handler := func(context.Context, *statewright.Task) (map[string]any, error) { return nil, nil }
	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", what)
			}
		}()
		f()
	}
	mustPanic("an invalid queue name", func() { w.Register("Payments", handler) })
	mustPanic("a nil handler", func() { w.Register("payments", nil) })
	w.Register("payments", handler)
	mustPanic("a queue registered twice", func() { w.Register("payments", handler) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Run(ctx); err != nil {
		t.Errorf("Run with an ended context: %v, want nil", err)
	}
	if err := w.Run(ctx); err == nil {
		t.Error("a second Run: no error")
	}
	mustPanic("Register after Run", func() { w.Register("shipping", handler) })
}

func TestWorkerSendsAgainAReportWhoseOutcomeTheServerLost(t *testing.T) {
	srv := newTaskServer()
	srv.completeErrs = []error{reasonError(codes.Unknown, "OUTCOME_UNKNOWN")}
	task := srv.schedule(t, "payments", map[string]any{})
	w := statewright.NewWorker(newTaskClient(t, srv), statewright.WorkerOptions{
		InitialBackoff: time.Millisecond, MaxBackoff: 8 * time.Millisecond, Logger: quiet(),
	})
	w.Register("payments", func(context.Context, *statewright.Task) (map[string]any, error) {
		return map[string]any{"ok": true}, nil
	})
	rw := runWorker(t, w)
	eventually(t, "the completion", func() bool {
		var n int
		srv.read(func() { n = len(srv.accepted) })
		return n == 1
	})
	if err := rw.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	srv.read(func() {
		if len(srv.completes) != 2 {
			t.Fatalf("%d completions sent, want 2 (the one whose outcome was lost, then again)", len(srv.completes))
		}
		for _, c := range srv.completes {
			if c.GetName() != task || c.GetRequestId() != srv.completes[0].GetRequestId() {
				t.Errorf("completion %s with request id %q, want %s with one request id", c.GetName(), c.GetRequestId(), task)
			}
		}
	})
}
