// The watch scenario, for bench/watch_bench.py: the WatchWorkflow delivery benchmark in one
// process, instead of Python watcher and signal processes that take a core of their own.
//
//	goload --scenario watch --target 127.0.0.1:PORT[,...] --ids-file FILE \
//	    [--watchers-per-instance 1] --rate R [--duration 10] [--channels 8] [--timeout 10] \
//	    [--concurrency N] [--ready-fd FD]
//
// FILE lists workflow ids (of bench-counter instances, whose "tick" sets context.last to
// the signal's payload.id), one a line. Instance i (its line index) lives on target
// i % len(targets): its streams and its signals all go there, like a client that routes each
// workflow to one replica (the replica that created it, which has it cached).
//
// The process opens --watchers-per-instance WatchWorkflow streams on each instance (no
// after_revision), over --channels connections spread evenly over the targets, and writes
// "ready" to --ready-fd only once every stream has received its CURRENT message; then it
// reads the start time from stdin as the other scenarios do. From the start time it sends
// SignalWorkflow open loop, --rate per second in total for --duration seconds, to the
// instances in turn (event "tick", payload {"id": scheduled send time in Unix nanoseconds}).
// Each watcher that receives the step records receive time minus that id: the latency
// counts from when the signal was due, so a sender that falls behind shows as latency.
// The streams stay open until 3 s after the last signal was due, then the process cancels
// them and writes one JSON object (watchReport) on stdout. --warmup is not used: the
// streams are open and quiet before the start, so there is nothing to warm. Unless given,
// --channels is 8 here and --concurrency (the cap on signals in flight) is rate x timeout
// + 64, which an open loop whose calls all end within their deadline never reaches.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

const (
	watchDefaultChannels = 8
	// After the last signal was due: time for its step to reach the watchers. What has
	// not arrived by then is counted as not delivered.
	watchDrain = 3 * time.Second
	// How long every stream together may take to receive its CURRENT message.
	watchOpenTimeout = 90 * time.Second
	// Streams being opened at once: a thousand at a time would all queue on the server's
	// one asyncio thread and make the slowest wait for all the others.
	watchOpenConcurrency = 128
)

// watchReport is the watch scenario's JSON report. Latencies are in milliseconds, one per
// step received with a numeric id; CPU seconds cover the signal window (the start time to
// --duration after it), CPU seconds total the whole process.
type watchReport struct {
	Instances          int            `json:"instances"`
	Watchers           int            `json:"watchers"`
	Channels           int            `json:"channels"`
	Window             float64        `json:"window"`
	LatenciesMs        []float64      `json:"latencies_ms"`
	Steps              int            `json:"steps"`
	WatchErrors        int            `json:"watch_errors"`
	WatchErrorCodes    map[string]int `json:"watch_error_codes"`
	SignalsSent        int64          `json:"signals_sent"`
	SignalsAccepted    int64          `json:"signals_accepted"`
	SignalsNotAccepted int64          `json:"signals_not_accepted"`
	SignalsFailed      map[string]int `json:"signals_failed"`
	Capped             int            `json:"capped"`
	BehindMax          float64        `json:"behind_max"`
	CPUSeconds         float64        `json:"cpu_seconds"`
	CPUSecondsTotal    float64        `json:"cpu_seconds_total"`
}

// watchInflight is the default cap on signals in flight: as many as can be in flight within
// their deadline at the offered rate, so the cap never skips a send that could be answered.
func watchInflight(rate, timeout float64) int {
	return int(math.Ceil(rate*timeout)) + 64
}

// watchChannels rounds the connection count up to a multiple of the targets, so that every
// replica gets as many connections as the others.
func watchChannels(channels, targets int) int {
	perTarget := max(1, (channels+targets-1)/targets)
	return perTarget * targets
}

// watchChannel is the connection that stream k of instance i uses (k 0 also carries the
// instance's signals). channelTargets sends connection j to target j % targets, so target
// t's connections are t, t + targets, t + 2*targets...; consecutive instances of a target
// and the streams of one instance take that target's connections in turn.
func watchChannel(instance, k, targets, channels int) int {
	perTarget := channels / targets
	slot := (instance/targets + k) % perTarget
	return slot*targets + instance%targets
}

func readIDs(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--ids-file: %w", err)
	}
	var ids []string
	for line := range strings.Lines(string(data)) {
		if id := strings.TrimSpace(line); id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("--ids-file %s lists no workflow id", path)
	}
	return ids, nil
}

// digits parses the decimal id a tick carried; anything else (the counter's initial "")
// is not a signal of this run.
func digits(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

type watchRun struct {
	plan        plan
	names       []string // workflows/<id>, by instance index
	conns       []*grpc.ClientConn
	timeout     time.Duration
	next        atomic.Uint64 // the next signal's number: instance next % len(names)
	sent        atomic.Int64
	accepted    atomic.Int64
	notAccepted atomic.Int64

	mu         sync.Mutex
	latencies  []float64
	steps      int
	errorCodes map[string]int
	failed     map[string]int
}

func (w *watchRun) conn(instance, k int) *grpc.ClientConn {
	return w.conns[watchChannel(instance, k, len(w.plan.targets), len(w.conns))]
}

// open starts every stream and returns once each has received its CURRENT message, or with
// the first stream's failure: a run whose watchers are not all in place measures nothing.
func (w *watchRun) open(ctx context.Context, streams *sync.WaitGroup) error {
	total := len(w.names) * w.plan.watchersPerInstance
	opened := make(chan error, total)
	gate := make(chan struct{}, watchOpenConcurrency)
	go func() {
		for i, name := range w.names {
			for k := range w.plan.watchersPerInstance {
				select {
				case gate <- struct{}{}:
				case <-ctx.Done():
					return
				}
				conn := w.conn(i, k)
				streams.Go(func() { w.watch(ctx, conn, name, opened, func() { <-gate }) })
			}
		}
	}()
	deadline := time.NewTimer(watchOpenTimeout)
	defer deadline.Stop()
	for n := range total {
		select {
		case err := <-opened:
			if err != nil {
				return fmt.Errorf("opening watch stream %d of %d: %w", n+1, total, err)
			}
		case <-deadline.C:
			return fmt.Errorf("only %d of %d watch streams open after %s", n, total, watchOpenTimeout)
		}
	}
	return nil
}

// watch is one stream: it reports on opened once, with nil after the CURRENT message, then
// records the steps until ctx is cancelled or the stream fails.
func (w *watchRun) watch(ctx context.Context, conn *grpc.ClientConn, name string, opened chan<- error, release func()) {
	request := &statewrightv1.WatchWorkflowRequest{Name: name}
	stream, err := statewrightv1.NewWorkflowServiceClient(conn).WatchWorkflow(ctx, request)
	if err == nil {
		var first *statewrightv1.WatchWorkflowResponse
		if first, err = stream.Recv(); err == nil && first.GetType() != statewrightv1.WatchEventType_WATCH_EVENT_TYPE_CURRENT {
			err = fmt.Errorf("first message is %s, not CURRENT", first.GetType())
		}
	}
	release()
	if err != nil {
		opened <- fmt.Errorf("%s: %w", name, err)
		return
	}
	opened <- nil
	// Kept per stream and merged once at the end: no lock on the receive path.
	latencies := []float64{}
	steps := 0
	for {
		message, err := stream.Recv()
		if err != nil {
			w.finish(ctx, latencies, steps, err)
			return
		}
		if message.GetType() != statewrightv1.WatchEventType_WATCH_EVENT_TYPE_STEP {
			continue
		}
		received := time.Now().UnixNano()
		steps++
		last := message.GetWorkflow().GetContext().GetFields()["last"].GetStringValue()
		if sent, ok := digits(last); ok {
			latencies = append(latencies, float64(received-sent)/1e6)
		}
	}
}

// finish merges one stream's measurements. Its end counts as an error unless it is our own
// cancellation at the end of the run; a stream the server ends cleanly counts as "OK", since
// a counter never finishes and its watcher misses every later step.
func (w *watchRun) finish(ctx context.Context, latencies []float64, steps int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.latencies = append(w.latencies, latencies...)
	w.steps += steps
	switch {
	case errors.Is(err, io.EOF):
		w.errorCodes["OK"]++
	case ctx.Err() != nil && status.Code(err) == codes.Canceled:
	default:
		w.errorCodes[codeName(status.Code(err))]++
	}
}

// signal is one open-loop send (an operation of client.openLoop, which passes the scheduled
// time). It counts every outcome itself and returns nil, so that guarded does not drop the
// calls that the open loop's drain cancels: sent = accepted + not accepted + failed.
func (w *watchRun) signal(ctx context.Context, scheduled time.Time) error {
	instance := int((w.next.Add(1) - 1) % uint64(len(w.names)))
	payload := &structpb.Struct{Fields: map[string]*structpb.Value{
		"id": structpb.NewStringValue(strconv.FormatInt(scheduled.UnixNano(), 10)),
	}}
	request := &statewrightv1.SignalWorkflowRequest{Name: w.names[instance], Event: "tick", Payload: payload}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	response, err := statewrightv1.NewWorkflowServiceClient(w.conn(instance, 0)).SignalWorkflow(ctx, request)
	w.sent.Add(1)
	switch {
	case err != nil:
		w.mu.Lock()
		w.failed[codeName(status.Code(err))]++
		w.mu.Unlock()
	case response.GetAccepted():
		w.accepted.Add(1)
	default:
		w.notAccepted.Add(1)
	}
	return nil
}

func runWatch(p plan) (*watchReport, error) {
	ids, err := readIDs(p.idsFile)
	if err != nil {
		return nil, err
	}
	p.channels = watchChannels(p.channels, len(p.targets))
	conns, err := connect(p)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	w := &watchRun{
		plan: p, conns: conns, timeout: seconds(p.timeout),
		latencies: []float64{}, errorCodes: map[string]int{}, failed: map[string]int{},
	}
	for _, id := range ids {
		w.names = append(w.names, "workflows/"+id)
	}

	streamsCtx, cancelStreams := context.WithCancel(context.Background())
	defer cancelStreams()
	var streams sync.WaitGroup
	if err := w.open(streamsCtx, &streams); err != nil {
		return nil, err
	}
	t0, err := startTime(p)
	if err != nil {
		return nil, err
	}
	rec := &recorder{begin: t0, end: t0.Add(seconds(p.duration)), errors: map[string]int{}}
	stopAt := rec.end.Add(watchDrain)
	stopStreams := time.AfterFunc(time.Until(stopAt), cancelStreams)
	defer stopStreams.Stop()
	// Bound the run: the open loop gives up on its calls 5 s after the window, the streams
	// end at stopAt; if the process is still here well after both, it is wedged.
	hard := time.AfterFunc(time.Until(stopAt.Add(openDrain+15*time.Second)), func() {
		fmt.Fprintf(os.Stderr, "goload: watch: still running %s after the window; giving up\n",
			time.Since(rec.end).Round(time.Second))
		os.Exit(3)
	})
	defer hard.Stop()
	cpuEnd := make(chan float64, 1)
	sampleEnd := time.AfterFunc(time.Until(rec.end), func() { cpuEnd <- cpuSeconds() })
	defer sampleEnd.Stop()

	time.Sleep(time.Until(t0))
	cpuBegin := cpuSeconds()
	c := &client{plan: p, rec: rec, conns: conns, timeout: w.timeout}
	c.openLoop(context.Background(), w.signal, p.rate, t0, 0, p.concurrency)
	streams.Wait()

	w.mu.Lock()
	defer w.mu.Unlock()
	rep := &watchReport{
		Instances:          len(w.names),
		Watchers:           len(w.names) * p.watchersPerInstance,
		Channels:           len(conns),
		Window:             p.duration,
		LatenciesMs:        w.latencies,
		Steps:              w.steps,
		WatchErrorCodes:    w.errorCodes,
		SignalsSent:        w.sent.Load(),
		SignalsAccepted:    w.accepted.Load(),
		SignalsNotAccepted: w.notAccepted.Load(),
		SignalsFailed:      w.failed,
		Capped:             rec.capped,
		BehindMax:          rec.behindMax,
		CPUSeconds:         <-cpuEnd - cpuBegin,
		CPUSecondsTotal:    cpuSeconds(),
	}
	for _, n := range w.errorCodes {
		rep.WatchErrors += n
	}
	return rep, nil
}
