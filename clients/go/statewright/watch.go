package statewright

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// Defaults of WatchOptions, the same as the service config's retry policy (0.1 s doubling
// to 2 s) so a resumed watch paces itself like any other retried call.
const (
	DefaultWatchInitialBackoff  = 100 * time.Millisecond
	DefaultWatchMaxBackoff      = 2 * time.Second
	DefaultWatchReconnectBudget = 30 * time.Second
)

// WatchOptions tunes Client.Watch; the zero value is a watch of the instance as it is now,
// with no deadline and the default reconnect policy.
type WatchOptions struct {
	// AfterRevision, when set, replays every revision after it before following live
	// steps; when nil, the first message is CURRENT, the instance as it is now.
	AfterRevision *int64
	// Timeout bounds each stream (a stream that times out ends the watch with
	// DEADLINE_EXCEEDED). Zero means no deadline beyond ctx's: a watch lasts as long as
	// the instance does.
	Timeout time.Duration
	// ReconnectBudget is how long Watch keeps reconnecting without handing over a new
	// revision before it gives up; zero means DefaultWatchReconnectBudget.
	ReconnectBudget time.Duration
	// InitialBackoff is the first wait before a reconnect, doubled per attempt up to
	// DefaultWatchMaxBackoff; zero means DefaultWatchInitialBackoff.
	InitialBackoff time.Duration
}

// Watch follows the instance name (a workflow id or "workflows/{id}") and calls fn with
// every revision, in order, each exactly once; it returns nil right after fn has seen a
// terminal revision (COMPLETED, FAILED or CANCELLED).
//
// If the stream breaks (UNAVAILABLE, or CANCELLED, INTERNAL or UNKNOWN without an ErrorInfo
// reason, which a server never sends deliberately) or is refused as RATE_LIMITED, Watch
// reconnects after the last revision it handed to fn, with backoff (and not before the
// RetryInfo's delay), and gives up returning the last error after ReconnectBudget without
// progress. Any other error is returned at once, unchanged, so
// status.Code, ErrorInfo and Reason read it as they read any call's error. An error from
// fn stops the watch and is returned as is. When ctx ends, Watch returns ctx.Err(); after
// Close it returns the stream's CANCELED error; in neither case does it reconnect.
//
// fn runs on the calling goroutine and may keep the message.
func (c *Client) Watch(ctx context.Context, name string, opts WatchOptions, fn func(*statewrightv1.WatchWorkflowResponse) error) error {
	w := &watcher{client: c, name: workflowResourceName(name), timeout: opts.Timeout, fn: fn}
	if opts.AfterRevision != nil {
		// Copied: the cursor moves on, and the caller's value must not move with it.
		after := *opts.AfterRevision
		w.after = &after
	}
	b := &backoff{
		initial: orDefault(opts.InitialBackoff, DefaultWatchInitialBackoff),
		maximum: DefaultWatchMaxBackoff,
		budget:  orDefault(opts.ReconnectBudget, DefaultWatchReconnectBudget),
	}
	for {
		failure, err := w.stream(ctx, b)
		if err != nil {
			return err
		}
		if w.done {
			return nil
		}
		if failure == nil {
			// An OK end without a terminal revision: either there is nothing left to see
			// (the caller's AfterRevision was at or past the end) or a replica stopped
			// early and the watch must go on.
			resp, err := c.GetWorkflow(ctx, &statewrightv1.GetWorkflowRequest{Name: w.name})
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return err
			}
			if w.finishedQuietly(resp.GetWorkflow()) {
				return nil
			}
		}
		delay, ok := b.delay()
		if after, limited := RetryDelay(failure); ok && limited && after > delay {
			delay = after
		}
		if !ok {
			if failure != nil {
				return failure
			}
			return status.Errorf(codes.Unavailable, "watch of %s kept ending before a terminal revision", w.name)
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}

// watcher is where a watch stands: after is the last revision handed to fn (or the
// caller's AfterRevision before any), so a reconnect resumes right after it and anything
// at or below it, which a replica may replay, is dropped.
type watcher struct {
	client  *Client
	name    string
	timeout time.Duration
	fn      func(*statewrightv1.WatchWorkflowResponse) error
	after   *int64
	done    bool
}

// stream runs one WatchWorkflow stream. failure is a broken stream a reconnect can cure
// (nil when it ended OK or reached a terminal revision); err ends the watch.
func (w *watcher) stream(ctx context.Context, b *backoff) (failure, err error) {
	var sctx context.Context
	var cancel context.CancelFunc
	if w.timeout > 0 {
		sctx, cancel = context.WithTimeout(ctx, w.timeout)
	} else {
		sctx, cancel = context.WithCancel(ctx)
	}
	// Releases the stream when fn fails or a terminal revision ends the watch before the
	// server's OK.
	defer cancel()
	req := &statewrightv1.WatchWorkflowRequest{Name: w.name}
	if w.after != nil {
		after := *w.after
		req.AfterRevision = &after
	}
	stream, err := w.client.WatchWorkflow(sctx, req)
	if err != nil {
		return w.classify(ctx, err)
	}
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return w.classify(ctx, err)
		}
		if w.after != nil && msg.GetRevision() <= *w.after {
			continue
		}
		revision := msg.GetRevision()
		w.after = &revision
		b.reset()
		if err := w.fn(msg); err != nil {
			return nil, err
		}
		if terminal(msg.GetWorkflow()) {
			w.done = true
			return nil, nil
		}
	}
}

func (w *watcher) classify(ctx context.Context, err error) (failure, final error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if w.client.closed() || !resumable(err) {
		return nil, err
	}
	return err, nil
}

// finishedQuietly tells, after a stream ended OK short of a terminal revision, whether
// the instance really has nothing left to show: it is terminal at a revision already seen.
func (w *watcher) finishedQuietly(current *statewrightv1.Workflow) bool {
	seen := int64(-1)
	if w.after != nil {
		seen = *w.after
	}
	return terminal(current) && current.GetRevision() <= seen
}

// resumable reports whether a stream failure is the transport's, not the server's
// verdict: a deliberate server error carries an ErrorInfo reason and is final, except
// UNAVAILABLE (for example SHUTTING_DOWN from a draining replica: another one, or the
// restarted one, will serve the resumed watch) and a RESOURCE_EXHAUSTED that says when to
// try again (RATE_LIMITED: the reconnect waits at least that long).
func resumable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable:
		return true
	case codes.ResourceExhausted:
		_, ok := RetryDelay(err)
		return ok
	case codes.Canceled, codes.Internal, codes.Unknown:
		return Reason(err) == ""
	default:
		return false
	}
}

func terminal(wf *statewrightv1.Workflow) bool {
	switch wf.GetStatus() {
	case statewrightv1.WorkflowStatus_WORKFLOW_STATUS_COMPLETED,
		statewrightv1.WorkflowStatus_WORKFLOW_STATUS_FAILED,
		statewrightv1.WorkflowStatus_WORKFLOW_STATUS_CANCELLED:
		return true
	default:
		return false
	}
}

// closed reports whether Close was called: streams then fail with CANCELED, which would
// otherwise look like a dropped connection worth reconnecting.
func (c *Client) closed() bool {
	return c.conn != nil && c.conn.GetState() == connectivity.Shutdown
}

// workflowResourceName accepts a bare id or a resource name, as the server wants the latter.
func workflowResourceName(name string) string {
	if strings.HasPrefix(name, "workflows/") {
		return name
	}
	return WorkflowName(name)
}

// backoff paces reconnects with exponential backoff and jitter, bounded by a budget that
// starts at the first failure since the last progress.
type backoff struct {
	initial, maximum, budget time.Duration
	next                     time.Duration
	since                    time.Time
}

func (b *backoff) reset() {
	b.next = 0
	b.since = time.Time{}
}

// delay is the wait before the next attempt; ok is false once the budget is spent.
func (b *backoff) delay() (d time.Duration, ok bool) {
	now := time.Now()
	if b.since.IsZero() {
		b.since = now
	}
	if now.Sub(b.since) >= b.budget {
		return 0, false
	}
	if b.next == 0 {
		b.next = b.initial
	} else {
		b.next = min(b.next*2, b.maximum)
	}
	// Equal jitter: never less than half the step, so a restarting server is not hammered.
	half := b.next / 2
	return half + rand.N(b.next-half+1), true
}

func orDefault(value, fallback time.Duration) time.Duration {
	if value > 0 {
		return value
	}
	return fallback
}
