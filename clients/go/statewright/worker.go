package statewright

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// Defaults of WorkerOptions.
const (
	DefaultWorkerConcurrency    = 10
	DefaultPollWait             = 25 * time.Second
	DefaultShutdownGrace        = 10 * time.Second
	DefaultWorkerInitialBackoff = 100 * time.Millisecond
	DefaultWorkerMaxBackoff     = 5 * time.Second
)

const (
	// The server's limits on a poll.
	maxPollWait  = 60 * time.Second
	maxPollTasks = 100
	maxPollBytes = 256 << 20
	// A poll's call deadline exceeds its wait by this much, so the server's empty answer,
	// not the deadline, normally ends it.
	pollDeadlineSlack = 5 * time.Second
	// How long releasing a task at shutdown may take; the shutdown is late already.
	releaseTimeout = 5 * time.Second
	// Heartbeats never come closer together than this, however near the lease's end.
	minHeartbeatInterval = 20 * time.Millisecond
	// error.type of a task the worker hands back unfinished, to be retried at once.
	workerShutdownType = "WORKER_SHUTDOWN"
	workerBusyType     = "WORKER_BUSY"
)

var queuePattern = regexp.MustCompile(`^[a-z][a-z0-9-.]{0,62}$`)

// Handler runs one attempt of a task and returns its result (plain data, as for
// structpb.NewStruct, or anything encoding/json encodes as an object), which the state's
// apply reads as `result`. A returned error fails the attempt (see TaskFailure).
//
// ctx ends when the task is cancelled (context.Cause gives ErrTaskCancelled), when its
// lease is lost (ErrLeaseLost), and when the worker's shutdown grace period runs out
// (ErrWorkerShutdown); in all three cases whatever the handler returns afterwards is
// dropped. A handler that panics fails its attempt with type PANIC.
type Handler func(ctx context.Context, task *Task) (map[string]any, error)

// WorkerOptions tunes a Worker; the zero value takes every default.
type WorkerOptions struct {
	// Concurrency is how many tasks run at once, across all queues; zero means
	// DefaultWorkerConcurrency. A poll asks for as many tasks as there are free slots, so
	// the worker never leases a task it cannot start. With several queues each poll asks
	// for at most an even share (Concurrency divided by the number of queues, rounded up),
	// so a quiet queue's long poll cannot hold every slot; run one Worker per queue to
	// give each queue all of them.
	Concurrency int
	// Identity names the worker in the server's diagnostics; empty means
	// "{pid}@{host name}".
	Identity string
	// PollWait is how long a poll waits for a task before it answers empty; zero means
	// DefaultPollWait. At most 60 s (the server's limit).
	PollWait time.Duration
	// ShutdownGrace is how long Run lets running handlers finish once its ctx ends; zero
	// means DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// InitialBackoff is the first wait after a failed call, doubled per failure (with
	// jitter) up to MaxBackoff; zero means DefaultWorkerInitialBackoff and
	// DefaultWorkerMaxBackoff.
	InitialBackoff, MaxBackoff time.Duration
	// Logger receives the worker's log; nil means slog.Default().
	Logger *slog.Logger
	// MaxReceiveBytes is the largest message the worker's connection receives; zero means
	// DefaultMaxReceiveBytes (gRPC's default). Each poll sends it as max_bytes, and the
	// server leases only the tasks whose answer fits: set it to the grpc.MaxCallRecvMsgSize
	// the connection was made with, if another.
	MaxReceiveBytes int
}

// DefaultMaxReceiveBytes is gRPC's default limit on a received message, 4 MiB.
const DefaultMaxReceiveBytes = 4 << 20

// Worker polls queues for tasks and runs the handler registered for each. Create it with
// NewWorker, Register handlers, then Run it.
type Worker struct {
	client statewrightv1.TaskServiceClient
	opts   WorkerOptions
	log    *slog.Logger
	// slots holds a token per task leased or being leased: its capacity is Concurrency.
	slots chan struct{}
	tasks sync.WaitGroup

	mu       sync.Mutex
	handlers map[string]Handler
	queues   []string
	started  bool
}

// NewWorker creates a worker that takes tasks through client (a *Client, or any
// TaskService client).
func NewWorker(client statewrightv1.TaskServiceClient, opts WorkerOptions) *Worker {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultWorkerConcurrency
	}
	if opts.Identity == "" {
		opts.Identity = defaultIdentity()
	}
	if opts.MaxReceiveBytes <= 0 {
		opts.MaxReceiveBytes = DefaultMaxReceiveBytes
	}
	opts.PollWait = min(orDefault(opts.PollWait, DefaultPollWait), maxPollWait)
	opts.ShutdownGrace = orDefault(opts.ShutdownGrace, DefaultShutdownGrace)
	opts.InitialBackoff = orDefault(opts.InitialBackoff, DefaultWorkerInitialBackoff)
	opts.MaxBackoff = max(orDefault(opts.MaxBackoff, DefaultWorkerMaxBackoff), opts.InitialBackoff)
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Worker{
		client:   client,
		opts:     opts,
		log:      log.With("identity", opts.Identity),
		slots:    make(chan struct{}, opts.Concurrency),
		handlers: map[string]Handler{},
	}
}

func defaultIdentity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return fmt.Sprintf("%d@%s", os.Getpid(), host)
}

// Identity is the name the worker polls under.
func (w *Worker) Identity() string { return w.opts.Identity }

// Register makes handler run the tasks of queue. It panics on a queue name the server
// would refuse, a queue registered twice, a nil handler, or a call after Run.
func (w *Worker) Register(queue string, handler Handler) {
	if !queuePattern.MatchString(queue) {
		panic(fmt.Sprintf("statewright: Register: queue %q does not match [a-z][a-z0-9-.]{0,62}", queue))
	}
	if handler == nil {
		panic("statewright: Register: nil handler for queue " + queue)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		panic("statewright: Register after Run")
	}
	if _, ok := w.handlers[queue]; ok {
		panic("statewright: Register: queue " + queue + " registered twice")
	}
	w.handlers[queue] = handler
	w.queues = append(w.queues, queue)
}

// Run polls every registered queue (one poller per queue) and runs tasks until ctx ends.
// Then it shuts down gracefully: it stops polling, lets running handlers finish and
// report for up to ShutdownGrace, and releases the tasks still running after that
// (FailTask with type WORKER_SHUTDOWN and no retry delay, so another worker takes them at
// once; their handlers' contexts end with ErrWorkerShutdown and Run does not wait for
// them to return). It returns nil once done; an error only if it cannot start (no
// handler registered, or Run called before).
//
// Calls that fail are retried with exponential backoff and jitter (waiting at least the
// RetryInfo delay the server sends with RATE_LIMITED), indefinitely for polls and for a
// result's report until its lease has run out; a result refused because the task was
// cancelled or its lease superseded is dropped quietly.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.started {
		w.mu.Unlock()
		return errors.New("statewright: Worker.Run called twice")
	}
	if len(w.queues) == 0 {
		w.mu.Unlock()
		return errors.New("statewright: Worker.Run with no handler registered")
	}
	w.started = true
	queues := slices.Clone(w.queues)
	handlers := w.handlers
	w.mu.Unlock()

	// Handlers, heartbeats and reports outlive ctx by the grace period; life ends with it.
	life, endLife := context.WithCancelCause(context.WithoutCancel(ctx))
	defer endLife(ErrWorkerShutdown)
	perPoll := min(maxPollTasks, (w.opts.Concurrency+len(queues)-1)/len(queues))
	w.log.Info("statewright worker: polling", "queues", queues, "concurrency", w.opts.Concurrency)
	var pollers sync.WaitGroup
	for _, queue := range queues {
		pollers.Go(func() { w.pollLoop(ctx, life, queue, handlers[queue], perPoll) })
	}
	<-ctx.Done()
	pollers.Wait()

	done := make(chan struct{})
	go func() {
		w.tasks.Wait()
		close(done)
	}()
	grace := time.NewTimer(w.opts.ShutdownGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		w.log.Warn("statewright worker: shutdown grace period over, releasing the tasks still running")
		endLife(ErrWorkerShutdown)
		<-done
	}
	w.log.Info("statewright worker: stopped")
	return nil
}

// pollLoop leases tasks of one queue while ctx lasts and starts each on its own goroutine.
func (w *Worker) pollLoop(ctx, life context.Context, queue string, handler Handler, perPoll int) {
	b := w.newBackoff()
	for {
		n, ok := w.reserve(ctx, perPoll)
		if !ok {
			return
		}
		tasks, err := w.poll(ctx, queue, n)
		if err != nil {
			w.unreserve(n)
			if ctx.Err() != nil {
				return
			}
			delay := pause(b, err)
			w.log.Log(ctx, levelOf(err), "statewright worker: poll failed", "queue", queue,
				"code", status.Code(err).String(), "reason", Reason(err), "error", err, "retry_in", delay)
			if !sleep(ctx, delay) {
				return
			}
			continue
		}
		b.reset()
		if len(tasks) > n {
			w.log.Error("statewright worker: the server leased more tasks than asked; handing the extra back",
				"queue", queue, "asked", n, "got", len(tasks))
			for _, pb := range tasks[n:] {
				w.releaseAsync(life, pb, workerBusyType, "worker was asked for fewer tasks")
			}
			tasks = tasks[:n]
		}
		w.unreserve(n - len(tasks))
		for _, pb := range tasks {
			if ctx.Err() != nil {
				// The poll answered as the shutdown began: hand the task back unstarted.
				w.unreserve(1)
				w.releaseAsync(life, pb, workerShutdownType, "worker shut down before the task started")
				continue
			}
			w.tasks.Add(1)
			go w.execute(life, handler, pb)
		}
	}
}

func (w *Worker) poll(ctx context.Context, queue string, n int) ([]*statewrightv1.Task, error) {
	pctx, cancel := context.WithTimeout(ctx, w.opts.PollWait+pollDeadlineSlack)
	defer cancel()
	resp, err := w.client.PollTasks(pctx, &statewrightv1.PollTasksRequest{
		Queue:    queue,
		Identity: w.opts.Identity,
		MaxTasks: int32(n),
		Wait:     durationpb.New(w.opts.PollWait),
		MaxBytes: int32(min(w.opts.MaxReceiveBytes, maxPollBytes)),
	})
	return resp.GetTasks(), err
}

// reserve takes one free slot, waiting for it, then as many more as are free, up to most.
func (w *Worker) reserve(ctx context.Context, most int) (int, bool) {
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		return 0, false
	}
	n := 1
	for n < most {
		select {
		case w.slots <- struct{}{}:
			n++
		default:
			return n, true
		}
	}
	return n, true
}

func (w *Worker) unreserve(n int) {
	for range n {
		<-w.slots
	}
}

type handlerOutcome struct {
	result map[string]any
	err    error
}

// execute runs one task: the handler, automatic heartbeats while it runs, then its
// report. life ending (the grace period is over) releases the task unless its outcome was
// already acknowledged.
func (w *Worker) execute(life context.Context, handler Handler, pb *statewrightv1.Task) {
	defer w.tasks.Done()
	defer w.unreserve(1)
	rt := newRunningTask(w, life, pb)
	log := w.log.With("queue", pb.GetQueue(), "task", pb.GetName(), "attempt", pb.GetAttempt())

	beat, stopBeating := context.WithCancel(life)
	var beating sync.WaitGroup
	beating.Go(func() { rt.heartbeatLoop(beat, log) })
	outcome := make(chan handlerOutcome, 1)
	handlerCtx, span := startTaskSpan(rt.ctx, pb)
	rt.span = span
	go func() { outcome <- runHandler(handlerCtx, handler, rt.task, log) }()
	var out handlerOutcome
	select {
	case out = <-outcome:
	case <-life.Done():
	}
	endTaskSpan(span, out)
	stopBeating()
	beating.Wait()
	defer rt.cancel(context.Canceled)

	if cause := rt.lostCause(); cause != nil {
		log.Debug("statewright worker: task dropped", "cause", cause)
		return
	}
	if life.Err() == nil && !w.report(life, rt, out, log) {
		return
	}
	rt.cancel(ErrWorkerShutdown)
	w.release(life, pb, workerShutdownType, "worker shut down before the task finished", log)
}

func runHandler(ctx context.Context, handler Handler, task *Task, log *slog.Logger) (out handlerOutcome) {
	defer func() {
		if v := recover(); v != nil {
			log.Error("statewright worker: handler panicked", "panic", v, "stack", string(debug.Stack()))
			out = handlerOutcome{err: &panicError{value: v}}
		}
	}()
	result, err := handler(ctx, task)
	return handlerOutcome{result: result, err: err}
}

// report sends the handler's outcome: CompleteTask for a result, FailTask for an error.
// cut is true when the grace period ended before the server acknowledged it.
func (w *Worker) report(life context.Context, rt *runningTask, out handlerOutcome, log *slog.Logger) (cut bool) {
	if out.err == nil {
		result, err := toStruct(out.result)
		if err == nil {
			req := &statewrightv1.CompleteTaskRequest{
				Name:       rt.pb.GetName(),
				LeaseToken: rt.pb.GetLeaseToken(),
				Result:     result,
				RequestId:  rt.requestID("complete"),
			}
			req.Traceparent, req.Tracestate = spanHeaders(rt.span)
			return w.call(life, rt, "CompleteTask", log, func(ctx context.Context) error {
				_, err := w.client.CompleteTask(trace.ContextWithSpan(ctx, rt.span), req)
				return err
			})
		}
		log.Error("statewright worker: the handler's result cannot be sent", "error", err)
		out.err = TaskFailure{Type: "INVALID_RESULT", Message: "the result cannot be encoded as a Struct: " + err.Error()}
	}
	f := failureOf(out.err)
	details, err := toStruct(f.Details)
	if err != nil {
		log.Error("statewright worker: the failure's details cannot be sent", "error", err)
	}
	req := &statewrightv1.FailTaskRequest{
		Name:         rt.pb.GetName(),
		LeaseToken:   rt.pb.GetLeaseToken(),
		Error:        &statewrightv1.TaskError{Type: f.Type, Message: f.Message, Details: details},
		NonRetryable: f.NonRetryable,
		RequestId:    rt.requestID("fail"),
	}
	req.Traceparent, req.Tracestate = spanHeaders(rt.span)
	if f.RetryDelay > 0 {
		req.RetryDelay = durationpb.New(f.RetryDelay)
	}
	if !f.CloseKeyUntil.IsZero() {
		req.CloseKeyUntil = timestamppb.New(f.CloseKeyUntil)
	}
	return w.call(life, rt, "FailTask", log, func(ctx context.Context) error {
		_, err := w.client.FailTask(trace.ContextWithSpan(ctx, rt.span), req)
		return err
	})
}

// call makes one report, retrying UNAVAILABLE, DEADLINE_EXCEEDED and a RESOURCE_EXHAUSTED
// that says when to retry (RATE_LIMITED) with backoff (the request id makes that safe)
// until the lease has run out: after that the server has counted the attempt as timed
// out. cut is true when life ended first.
func (w *Worker) call(life context.Context, rt *runningTask, method string, log *slog.Logger, fn func(context.Context) error) (cut bool) {
	b := w.newBackoff()
	for {
		err := fn(life)
		switch {
		case err == nil:
			return false
		case life.Err() != nil:
			return true
		case dropCause(err) != nil:
			log.Debug("statewright worker: "+method+" refused; task dropped", "reason", Reason(err), "error", err)
			return false
		case !transient(err):
			log.Error("statewright worker: "+method+" refused", "code", status.Code(err).String(),
				"reason", Reason(err), "error", err)
			return false
		case time.Now().After(rt.leaseExpiry()):
			log.Warn("statewright worker: "+method+" failed and the lease is over; giving up", "error", err)
			return false
		}
		delay := pause(b, err)
		log.Warn("statewright worker: "+method+" failed", "code", status.Code(err).String(), "error", err, "retry_in", delay)
		if !sleep(life, delay) {
			return true
		}
	}
}

// release hands an unfinished task back with FailTask and no retry delay, so another
// worker takes it at once. It runs after life has ended (or unrelated to it), so it has a
// short deadline of its own.
func (w *Worker) release(life context.Context, pb *statewrightv1.Task, typ, message string, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(life), releaseTimeout)
	defer cancel()
	_, err := w.client.FailTask(ctx, &statewrightv1.FailTaskRequest{
		Name:       pb.GetName(),
		LeaseToken: pb.GetLeaseToken(),
		Error:      &statewrightv1.TaskError{Type: typ, Message: message + " (" + w.opts.Identity + ")"},
		RetryDelay: durationpb.New(0),
		RequestId:  fmt.Sprintf("%s#%d#fail", pb.GetName(), pb.GetAttempt()),
	})
	switch {
	case err == nil:
		log.Info("statewright worker: task released", "type", typ)
	case dropCause(err) != nil:
		log.Debug("statewright worker: release refused; task dropped", "reason", Reason(err))
	default:
		log.Warn("statewright worker: release failed; the task returns when its lease runs out", "error", err)
	}
}

func (w *Worker) releaseAsync(life context.Context, pb *statewrightv1.Task, typ, message string) {
	log := w.log.With("queue", pb.GetQueue(), "task", pb.GetName(), "attempt", pb.GetAttempt())
	w.tasks.Go(func() { w.release(life, pb, typ, message, log) })
}

// heartbeatLoop heartbeats at a third of the time left on the lease, so the short first
// lease a poll grants is extended early and each later one well before it ends.
func (rt *runningTask) heartbeatLoop(ctx context.Context, log *slog.Logger) {
	b := rt.w.newBackoff()
	for {
		var wait time.Duration
		if left := time.Until(rt.leaseExpiry()); left > 0 {
			wait = max(left/3, minHeartbeatInterval)
		} else {
			// The lease looks over by this clock (an outage, or clocks apart): keep
			// trying at the backoff's pace until the server says who holds it.
			wait, _ = b.delay()
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-rt.renewed:
			timer.Stop()
			continue
		case <-timer.C:
		}
		err := rt.heartbeat(ctx)
		switch {
		case err == nil:
			if time.Until(rt.leaseExpiry()) > 0 {
				b.reset()
			}
		case ctx.Err() != nil:
			return
		case rt.lostCause() != nil:
			log.Debug("statewright worker: heartbeat: task dropped", "cause", rt.lostCause())
			return
		default:
			log.Log(ctx, levelOf(err), "statewright worker: heartbeat failed", "code", status.Code(err).String(),
				"reason", Reason(err), "error", err)
		}
	}
}

func (w *Worker) newBackoff() *backoff {
	return &backoff{initial: w.opts.InitialBackoff, maximum: w.opts.MaxBackoff, budget: math.MaxInt64}
}

// dropCause tells whether err says the task is no longer this attempt's to report on,
// and why: such a task is dropped without another word to the server.
func dropCause(err error) error {
	switch status.Code(err) {
	case codes.FailedPrecondition:
		switch Reason(err) {
		case "LEASE_SUPERSEDED":
			return ErrLeaseLost
		case "TASK_CANCELLED":
			return ErrTaskCancelled
		}
	case codes.NotFound:
		return ErrLeaseLost
	}
	return nil
}

// transient tells whether a call may succeed if made again: the server (or the way to
// it) is unavailable or slow, or it refused the call for now and said for how long
// (RATE_LIMITED, with a RetryInfo).
func transient(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	case codes.Unknown:
		// The server lost the answer of its own commit; the same request id is answered
		// with what became of it.
		return Reason(err) == "OUTCOME_UNKNOWN"
	case codes.ResourceExhausted:
		_, ok := RetryDelay(err)
		return ok
	default:
		return false
	}
}

// pause is the wait before retrying after err: the backoff's next step, or the server's
// RetryInfo delay when that is longer, since a call sooner would only be refused again.
func pause(b *backoff, err error) time.Duration {
	delay, _ := b.delay()
	if after, ok := RetryDelay(err); ok && after > delay {
		return after
	}
	return delay
}

// levelOf logs an outage as a warning and anything else (a bug, on one side or the
// other) as an error.
func levelOf(err error) slog.Level {
	if transient(err) {
		return slog.LevelWarn
	}
	return slog.LevelError
}

// sleep waits d, or less if ctx ends first; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
