package statewright

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// Causes of a handler's context ending early, as context.Cause reports them (and as
// Task.Heartbeat returns them, wrapped around the server's error when there is one).
var (
	// ErrTaskCancelled: the task's state was left (an event, a timer, CancelWorkflow). The
	// server refuses any result now; the worker reports nothing for the task.
	ErrTaskCancelled = errors.New("statewright: task cancelled")
	// ErrLeaseLost: this attempt's lease is no longer current (it lapsed and the task went
	// to another attempt, or the task is gone); the worker reports nothing for it.
	ErrLeaseLost = errors.New("statewright: task lease lost")
	// ErrWorkerShutdown: the worker's shutdown grace period ended while the handler ran; the
	// worker has released the task so that another worker takes it at once.
	ErrWorkerShutdown = errors.New("statewright: worker shut down")
)

// genericErrorType is error.type for a handler error that names no type of its own.
const genericErrorType = "ERROR"

// Task is one leased attempt of a task, as a handler sees it.
type Task struct {
	// Name is the task's resource name, "workflows/{workflow_id}/tasks/{task_id}".
	Name string
	// Workflow is its instance's resource name, "workflows/{workflow_id}".
	Workflow string
	// State is the task state that scheduled it.
	State string
	// Queue is the queue it came from.
	Queue string
	// Input is what the state's input expression gave, as plain data: numbers are
	// float64, as in any google.protobuf.Struct. Never nil.
	Input map[string]any
	// Attempt counts from 1.
	Attempt int
	// HeartbeatDetails is what the latest heartbeat of an earlier attempt carried (progress
	// to resume from), or nil.
	HeartbeatDetails map[string]any
	// Deadline is when the task times out whatever happens (schedule_to_close); zero if
	// the server gave none.
	Deadline time.Time
	// ItemIndex is, for an item of a fan-out (a task state with `map`), its index in the
	// list; nil for the task of a state without `map`.
	ItemIndex *int
	// Traceparent and Tracestate are the W3C trace context of the step that scheduled the
	// task ("" when the server was not tracing). The worker's span of the attempt is
	// already its child: the handler's context carries that span.
	Traceparent string
	Tracestate  string

	run *runningTask
}

// Heartbeat reports progress now: details (nil keeps the last ones given) are stored with
// the task for a later attempt to see, and the lease is extended. The worker heartbeats on
// its own, with the latest details, so a handler calls this only to save progress at once.
//
// It returns ErrTaskCancelled when the server answers that the task was cancelled, and
// ErrLeaseLost (wrapping the server's error) when the lease is no longer current; in both
// cases the handler's context is cancelled with that cause. Once the handler's context has
// ended it returns the context's cause without calling the server. Other errors (for
// example UNAVAILABLE) are the call's, and the worker keeps heartbeating on its own.
func (t *Task) Heartbeat(ctx context.Context, details map[string]any) error {
	rt := t.run
	if rt == nil {
		return errors.New("statewright: Heartbeat on a Task that no worker handed over")
	}
	if details != nil {
		st, err := toStruct(details)
		if err != nil {
			return fmt.Errorf("statewright: heartbeat details: %w", err)
		}
		rt.setDetails(st)
	}
	if rt.ctx.Err() != nil {
		return context.Cause(rt.ctx)
	}
	err := rt.heartbeat(ctx)
	if err == nil {
		// The lease moved: the automatic heartbeats reschedule from the new expiry.
		select {
		case rt.renewed <- struct{}{}:
		default:
		}
	}
	return err
}

// TaskFailure is an error a handler returns (directly or wrapped) to choose how its
// attempt fails. Any other error fails the attempt as retryable, with type "ERROR" or, for
// an error of an exported named type, that type's name in UPPER_SNAKE (*fs.PathError gives
// "PATH_ERROR").
type TaskFailure struct {
	// Type is the UPPER_SNAKE name the definition's retry policy and task_failed
	// transitions match on; empty means "ERROR".
	Type string
	// Message is for people.
	Message string
	// Details is anything else the workflow should see (plain data, as for a result).
	Details map[string]any
	// NonRetryable gives up now, whatever the retry policy says.
	NonRetryable bool
	// RetryDelay, when positive, retries after this long instead of the policy's backoff.
	RetryDelay time.Duration
	// CloseKeyUntil, when set, closes the task's concurrency key on its queue until then
	// (an API's Retry-After, say): no task of that key is handed out before it.
	CloseKeyUntil time.Time
}

func (f TaskFailure) Error() string {
	typ := f.Type
	if typ == "" {
		typ = genericErrorType
	}
	if f.Message == "" {
		return typ
	}
	return typ + ": " + f.Message
}

// failureOf says how a handler's error fails its attempt.
func failureOf(err error) TaskFailure {
	var f TaskFailure
	var pf *TaskFailure
	var panicked *panicError
	switch {
	case errors.As(err, &panicked):
		return TaskFailure{Type: "PANIC", Message: err.Error()}
	case errors.As(err, &f):
	case errors.As(err, &pf) && pf != nil:
		f = *pf
	default:
		return TaskFailure{Type: errorTypeName(err), Message: err.Error()}
	}
	if f.Type == "" {
		f.Type = genericErrorType
	}
	return f
}

// errorTypeName is the UPPER_SNAKE name of the first exported named type along err's
// chain: fmt.Errorf's and errors.New's own types are unexported, so a wrapped
// *fs.PathError still gives PATH_ERROR, and a plain errors.New gives ERROR.
func errorTypeName(err error) string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		t := reflect.TypeOf(e)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		name, _, _ := strings.Cut(t.Name(), "[")
		if name != "" && unicode.IsUpper([]rune(name)[0]) {
			return upperSnake(name)
		}
	}
	return genericErrorType
}

// upperSnake turns a Go type name into UPPER_SNAKE: PathError -> PATH_ERROR,
// HTTPError -> HTTP_ERROR.
func upperSnake(name string) string {
	runes := []rune(name)
	var b strings.Builder
	for i, r := range runes {
		if i > 0 && unicode.IsUpper(r) {
			prev := runes[i-1]
			nextLower := i+1 < len(runes) && unicode.IsLower(runes[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// panicError is a handler's panic, failed like any other error (type PANIC) so one bad
// task cannot take the worker down.
type panicError struct {
	value any
}

func (p *panicError) Error() string { return fmt.Sprintf("handler panicked: %v", p.value) }

// toStruct converts plain data to a Struct. structpb takes only the basic types
// (map[string]any, []any, numbers, strings, bools); anything else that encoding/json
// can encode (typed slices, structs with tags) goes through JSON.
func toStruct(m map[string]any) (*structpb.Struct, error) {
	if m == nil {
		return nil, nil
	}
	if st, err := structpb.NewStruct(m); err == nil {
		return st, nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	st := &structpb.Struct{}
	if err := protojson.Unmarshal(raw, st); err != nil {
		return nil, err
	}
	return st, nil
}

// runningTask is the worker's side of a task in progress: its lease, the details to send
// with the next heartbeat, and whether it was lost (cancelled or superseded), after which
// nothing is reported for it.
type runningTask struct {
	w      *Worker
	pb     *statewrightv1.Task
	task   *Task
	ctx    context.Context
	cancel context.CancelCauseFunc
	// renewed tells the automatic heartbeats that a handler's own heartbeat moved the lease.
	renewed chan struct{}

	// span is the attempt's span, the parent of the calls that report its outcome.
	span trace.Span

	mu      sync.Mutex
	details *structpb.Struct
	expiry  time.Time
	lost    error
}

func newRunningTask(w *Worker, parent context.Context, pb *statewrightv1.Task) *runningTask {
	ctx, cancel := context.WithCancelCause(parent)
	rt := &runningTask{w: w, pb: pb, ctx: ctx, cancel: cancel, renewed: make(chan struct{}, 1)}
	if pb.GetLeaseExpireTime() != nil {
		rt.expiry = pb.GetLeaseExpireTime().AsTime()
	}
	rt.task = &Task{
		Name:     pb.GetName(),
		Workflow: pb.GetWorkflow(),
		State:    pb.GetState(),
		Queue:    pb.GetQueue(),
		Input:    pb.GetInput().AsMap(),
		Attempt:  int(pb.GetAttempt()),
		run:      rt,

		Traceparent: pb.GetTraceparent(),
		Tracestate:  pb.GetTracestate(),
	}
	if pb.GetHeartbeatDetails() != nil {
		rt.task.HeartbeatDetails = pb.GetHeartbeatDetails().AsMap()
	}
	if pb.GetDeadline() != nil {
		rt.task.Deadline = pb.GetDeadline().AsTime()
	}
	if pb.ItemIndex != nil {
		index := int(pb.GetItemIndex())
		rt.task.ItemIndex = &index
	}
	return rt
}

// requestID is stable for the task and attempt, so a retried report is idempotent.
func (rt *runningTask) requestID(verb string) string {
	return fmt.Sprintf("%s#%d#%s", rt.pb.GetName(), rt.pb.GetAttempt(), verb)
}

func (rt *runningTask) setDetails(st *structpb.Struct) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.details = st
}

func (rt *runningTask) leaseExpiry() time.Time {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.expiry
}

// lose marks the task lost, once, and cancels its handler with cause.
func (rt *runningTask) lose(cause error) {
	rt.mu.Lock()
	if rt.lost == nil {
		rt.lost = cause
	}
	rt.mu.Unlock()
	rt.cancel(cause)
}

func (rt *runningTask) lostCause() error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.lost
}

// heartbeat sends one HeartbeatTask with the latest details and applies the answer.
func (rt *runningTask) heartbeat(ctx context.Context) error {
	rt.mu.Lock()
	details := rt.details
	rt.mu.Unlock()
	resp, err := rt.w.client.HeartbeatTask(ctx, &statewrightv1.HeartbeatTaskRequest{
		Name:       rt.pb.GetName(),
		LeaseToken: rt.pb.GetLeaseToken(),
		Details:    details,
	})
	if err != nil {
		if cause := dropCause(err); cause != nil {
			rt.lose(cause)
			return fmt.Errorf("%w: %w", cause, err)
		}
		return err
	}
	if t := resp.GetLeaseExpireTime(); t != nil {
		rt.mu.Lock()
		rt.expiry = t.AsTime()
		rt.mu.Unlock()
	}
	if resp.GetCancelRequested() {
		rt.lose(ErrTaskCancelled)
		return ErrTaskCancelled
	}
	return nil
}
