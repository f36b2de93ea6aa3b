// Command goload is one load process of the runtime benchmark, in Go: it does exactly what
// one child process of bench/loadgen.py does (`_child_main`), at a fraction of the client
// CPU a grpc.aio call costs, so that the measured server keeps the machine's cores.
//
// bench/loadgen.py (Plan.engine "go", `--loadgen go` in bench/run.sh) builds it into
// .cache/goload/ and runs it as each load process, with the same settings as flags:
//
//	goload --target 127.0.0.1:PORT[,127.0.0.1:PORT2...] --scenario start|echo|hitl|resume \
//	    [--processes N --index I] [--concurrency 16] [--rate R] [--warmup 2] [--duration 10] \
//	    [--prepare N] [--request-ids] [--version V] [--channels 1] [--timeout 10] \
//	    [--ready-fd FD]
//
// bench/watch_bench.py runs one more scenario, watch (see watch.go): WatchWorkflow streams
// on the instances listed in --ids-file, and SignalWorkflow open loop at --rate to them.
// bench/task_bench.py runs another, tasks (see tasks.go): a task worker of its benchmark.
//
// --rate is the total offered rate of all --processes processes (0: closed loop); this
// process sends rate/processes per second, phase-shifted by index/processes of an interval.
//
// Targets and channels: --target may list several servers, comma-separated (several
// statewrightd replicas, each on its own port). The process opens --channels connections,
// channel i to target i % len(targets); with several targets and fewer channels than
// targets it opens one channel per target. Calls are routed like a client that routes each
// workflow to one replica: every call of one workflow goes through the same channel. A
// start-to-complete or an echo is one call, so each takes the next channel round robin;
// human in the loop takes the next channel for its start and resumes through the same one;
// the resume scenario parks its instances round robin and resumes each through the channel
// that parked it. (Routing per call instead would send most resumes to a replica that has
// not cached the instance and must load it from PostgreSQL first.)
//
// Start-up handshake: once connected (and, for resume, once its --prepare instances are
// parked in WAITING) the process writes "ready\n" to --ready-fd and closes it, then reads
// one line from stdin: the common start time, in Unix seconds. Without --ready-fd it starts
// 0.5 s after it is ready. Exit status 0 means it wrote one JSON object on stdout, the
// fields of loadgen.py's ChildReport (latencies in seconds); any failure exits non-zero
// with the reason on stderr.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// plan mirrors loadgen.py's Plan (one process's view: index is this process).
type plan struct {
	targets     []string // --target, split at commas
	scenario    string
	processes   int
	index       int
	concurrency int
	rate        float64
	warmup      float64
	duration    float64
	prepare     int
	requestIDs  bool
	version     int
	channels    int
	timeout     float64
	readyFD     int
	maxProcs    int
	tlsCA       string // --tls-ca: TLS, trusting this CA (PEM); "": plaintext
	tokenFile   string // --token-file: a bearer token sent with every call
	// watch scenario only
	idsFile             string
	watchersPerInstance int
	// series: completions and latencies per bucket of this many seconds (0: none)
	seriesEvery float64
	// tasks scenario only
	taskWindow     string
	pollers        int
	taskQueue      string
	taskFailFirst  bool
	taskDefinition string
}

// report is loadgen.py's ChildReport, field for field.
type report struct {
	Index           int            `json:"index"`
	Ops             int            `json:"ops"`
	Window          float64        `json:"window"`
	Latencies       []float64      `json:"latencies"`
	StartLatencies  []float64      `json:"start_latencies"`
	ResumeLatencies []float64      `json:"resume_latencies"`
	Errors          map[string]int `json:"errors"`
	BehindMax       float64        `json:"behind_max"`
	Capped          int            `json:"capped"`
	CPUSeconds      float64        `json:"cpu_seconds"`
	Prepared        int            `json:"prepared"`
	// Per --series-every bucket of the window, from its start: completed operations and
	// their latencies (omitted without --series-every).
	Series []bucket `json:"series,omitempty"`
}

type bucket struct {
	Ops       int       `json:"ops"`
	Latencies []float64 `json:"latencies"`
}

const (
	// How long to wait for each channel to connect, as loadgen.py's channel_ready().
	connectTimeout = 10 * time.Second
	// Open loop: how long after the window the in-flight calls may still finish.
	openDrain = 5 * time.Second
	// How long to wait for the start time once ready (the parent gives up long before).
	startTimeout = 15 * time.Minute
)

func main() {
	p := parseFlags()
	if p.maxProcs > 0 && os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(p.maxProcs)
	}
	if os.Getenv("GOGC") == "" {
		// Few, larger collections: the heap is small (latency slices, in-flight calls).
		debug.SetGCPercent(400)
	}
	var rep any
	var err error
	switch p.scenario {
	case "watch":
		rep, err = runWatch(p)
	case "tasks":
		rep, err = runTasks(p)
	default:
		rep, err = run(p)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "goload: process %d: %v\n", p.index, err)
		os.Exit(1)
	}
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	if err := json.NewEncoder(out).Encode(rep); err != nil {
		fmt.Fprintf(os.Stderr, "goload: writing the report: %v\n", err)
		os.Exit(1)
	}
	if err := out.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "goload: writing the report: %v\n", err)
		os.Exit(1)
	}
}

func parseFlags() plan {
	var p plan
	var target string
	flag.StringVar(&target, "target", "", "HOST:PORT of the server, or several comma-separated (required)")
	flag.StringVar(&p.scenario, "scenario", "", "start, echo, hitl, resume, watch or tasks (required)")
	flag.IntVar(&p.processes, "processes", 1, "load processes in the run (splits --rate)")
	flag.IntVar(&p.index, "index", 0, "this process's index among --processes")
	flag.IntVar(&p.concurrency, "concurrency", 16, "closed loop: lanes; open loop: in-flight cap")
	flag.Float64Var(&p.rate, "rate", 0, "open loop: total ops/s of all processes; 0: closed loop")
	flag.Float64Var(&p.warmup, "warmup", 2, "seconds after the start that are not measured")
	flag.Float64Var(&p.duration, "duration", 10, "measured window, seconds")
	flag.IntVar(&p.prepare, "prepare", 0, "resume: WAITING instances to park first")
	flag.BoolVar(&p.requestIDs, "request-ids", false, "send a request_id with every call")
	flag.IntVar(&p.version, "version", 0, "StartWorkflow.version; 0: latest")
	flag.IntVar(&p.channels, "channels", 1, "gRPC connections, spread over the targets (at least one per target)")
	flag.Float64Var(&p.timeout, "timeout", 10, "per-RPC deadline, seconds")
	flag.IntVar(&p.readyFD, "ready-fd", 0, "write \"ready\" here, then read the start time from stdin")
	flag.IntVar(&p.maxProcs, "gomaxprocs", 1, "GOMAXPROCS unless the environment sets it; 0: Go's default")
	flag.StringVar(&p.tlsCA, "tls-ca", "", "TLS, trusting the CA certificate (PEM) in this file; default plaintext")
	flag.StringVar(&p.tokenFile, "token-file", "", "send the bearer token (a JWT) in this file with every call; needs --tls-ca")
	flag.StringVar(&p.idsFile, "ids-file", "", "watch: workflow ids to watch and signal, one a line")
	flag.IntVar(&p.watchersPerInstance, "watchers-per-instance", 1, "watch: streams on each instance")
	flag.Float64Var(&p.seriesEvery, "series-every", 0, "report completions per bucket of this many seconds; 0: none")
	flag.StringVar(&p.taskWindow, "task-window", "", "tasks: BEGIN,END,STOP in Unix seconds (count in [BEGIN, END), work until STOP)")
	flag.IntVar(&p.pollers, "pollers", 4, "tasks: concurrent polls")
	flag.StringVar(&p.taskQueue, "task-queue", "bench.steps", "tasks: the queue to poll")
	flag.BoolVar(&p.taskFailFirst, "task-fail-first", false, "tasks: fail each task's first attempt (retried at once)")
	flag.StringVar(&p.taskDefinition, "task-definition", "four-tasks", "tasks: the definition a completed instance starts again")
	flag.Parse()
	p.targets = splitTargets(target)
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if p.scenario == "watch" {
		// The other scenarios' defaults fit a few dozen calls in flight; the watch scenario
		// carries hundreds of streams, and an open loop that must never skip a send.
		if !given["channels"] {
			p.channels = watchDefaultChannels
		}
		if !given["concurrency"] {
			p.concurrency = watchInflight(p.rate, p.timeout)
		}
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "goload: "+format+"\n", args...)
		os.Exit(2)
	}
	switch {
	case len(p.targets) == 0:
		fail("--target is required (HOST:PORT, or several comma-separated)")
	case !slices.Contains([]string{"start", "echo", "hitl", "resume", "watch", "tasks"}, p.scenario):
		fail("--scenario must be start, echo, hitl, resume, watch or tasks; got %q", p.scenario)
	case p.scenario == "tasks" && (p.taskWindow == "" || p.pollers < 1):
		fail("--scenario tasks needs --task-window and --pollers >= 1")
	case p.scenario == "resume" && p.prepare <= 0:
		fail("--scenario resume needs --prepare N (WAITING instances per process)")
	case p.scenario == "watch" && (p.idsFile == "" || p.watchersPerInstance < 1 || p.rate <= 0):
		fail("--scenario watch needs --ids-file, --watchers-per-instance >= 1 and --rate > 0")
	case p.scenario == "watch" && p.processes != 1:
		fail("--scenario watch runs as one process (--processes 1)")
	case p.processes < 1 || p.index < 0 || p.index >= p.processes:
		fail("need 0 <= --index < --processes")
	case p.concurrency < 1 || p.channels < 1:
		fail("--concurrency and --channels must be at least 1")
	case p.seriesEvery < 0:
		fail("--series-every must not be negative")
	case p.rate < 0 || p.warmup < 0 || p.duration <= 0 || p.timeout <= 0:
		fail("--rate, --warmup must not be negative; --duration, --timeout must be positive")
	case p.version < 0 || p.version > math.MaxInt32:
		fail("--version out of range")
	}
	return p
}

// splitTargets splits --target at commas, dropping blanks.
func splitTargets(target string) []string {
	var targets []string
	for _, t := range strings.Split(target, ",") {
		if t = strings.TrimSpace(t); t != "" {
			targets = append(targets, t)
		}
	}
	return targets
}

// channelTargets is the target of each channel: channel i to targets[i % len(targets)],
// and at least one channel per target when there are several.
func channelTargets(targets []string, channels int) []string {
	n := max(channels, 1)
	if len(targets) > 1 {
		n = max(n, len(targets))
	}
	out := make([]string, n)
	for i := range out {
		out[i] = targets[i%len(targets)]
	}
	return out
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// -- measurements -----------------------------------------------------------------------

// recorder is loadgen.py's Recorder, shared by every goroutine of the process.
type recorder struct {
	begin, end time.Time // the measured window (monotonic clock readings)

	mu              sync.Mutex
	ops             int
	latencies       []float64
	startLatencies  []float64
	resumeLatencies []float64
	errors          map[string]int
	behindMax       float64
	capped          int
	exhaustedAt     time.Time // resume: when the parked pool ran out (zero: never)
	seriesEvery     time.Duration
	series          []bucket
}

func (r *recorder) inWindow(now time.Time) bool {
	return !now.Before(r.begin) && !now.After(r.end)
}

func (r *recorder) error(key string) {
	r.mu.Lock()
	r.errors[key]++
	r.mu.Unlock()
}

// record counts one completed operation if it completed inside the window.
func (r *recorder) record(now time.Time, latency float64, start, resume float64, hasStart, hasResume bool) {
	if !r.inWindow(now) {
		return
	}
	r.mu.Lock()
	r.ops++
	r.latencies = append(r.latencies, latency)
	if r.seriesEvery > 0 {
		i := int(now.Sub(r.begin) / r.seriesEvery)
		for len(r.series) <= i {
			r.series = append(r.series, bucket{Latencies: []float64{}})
		}
		r.series[i].Ops++
		r.series[i].Latencies = append(r.series[i].Latencies, latency)
	}
	if hasStart {
		r.startLatencies = append(r.startLatencies, start)
	}
	if hasResume {
		r.resumeLatencies = append(r.resumeLatencies, resume)
	}
	r.mu.Unlock()
}

// cpuSeconds is this process's user + system CPU so far, all threads.
func cpuSeconds() float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(usage.Utime) + tv(usage.Stime)
}

// -- operations -------------------------------------------------------------------------

// runtimeError is what loadgen.py raises as RuntimeError: counted under its text.
type runtimeError string

func (e runtimeError) Error() string { return string(e) }

// errExhausted: the resume scenario ran out of parked instances (loadgen's _PoolExhausted).
var errExhausted = errors.New("parked pool exhausted")

var (
	orderInput = map[string]any{"items": []any{"a"}, "price": 3.0, "quantity": 2}
	mailInput  = map[string]any{"topic": "benchmark"}
	approve    = map[string]any{"approver": "bench"}
)

type client struct {
	plan    plan
	rec     *recorder
	conns   []*grpc.ClientConn
	next    atomic.Uint64
	timeout time.Duration
	order   *statewrightv1.StartWorkflowRequest
	mail    *statewrightv1.StartWorkflowRequest
	approve *structpb.Struct

	parkedMu sync.Mutex
	parked   []parkedInstance
}

// parkedInstance is a WAITING instance of the resume scenario and the channel that parked
// it: its resume goes through the same channel (to the same replica).
type parkedInstance struct {
	name string
	conn *grpc.ClientConn
}

func mustStruct(values map[string]any) *structpb.Struct {
	s, err := structpb.NewStruct(values)
	if err != nil {
		panic(err)
	}
	return s
}

func newClient(p plan, conns []*grpc.ClientConn) *client {
	c := &client{
		plan: p, conns: conns, timeout: seconds(p.timeout), approve: mustStruct(approve),
	}
	c.order = &statewrightv1.StartWorkflowRequest{
		Definition: "order-pricing", Version: int32(p.version), Input: mustStruct(orderInput),
	}
	c.mail = &statewrightv1.StartWorkflowRequest{
		Definition: "mail-approval", Version: int32(p.version), Input: mustStruct(mailInput),
	}
	return c
}

// conn: the next channel, round robin (always the same one with one channel). Called once
// per workflow: every call of that workflow then goes through the channel it returned.
func (c *client) conn() *grpc.ClientConn {
	if len(c.conns) == 1 {
		return c.conns[0]
	}
	return c.conns[(c.next.Add(1)-1)%uint64(len(c.conns))]
}

// head is what the load generator needs of a response's workflow.
type head struct {
	name   string
	status statewrightv1.WorkflowStatus
}

func headOf(workflow *statewrightv1.Workflow) head {
	return head{name: workflow.GetName(), status: workflow.GetStatus()}
}

func (c *client) startWorkflow(ctx context.Context, conn *grpc.ClientConn, request *statewrightv1.StartWorkflowRequest) (head, error) {
	response, err := statewrightv1.NewWorkflowServiceClient(conn).StartWorkflow(ctx, request)
	return headOf(response.GetWorkflow()), err
}

func (c *client) resumeWorkflow(ctx context.Context, conn *grpc.ClientConn, request *statewrightv1.ResumeWorkflowRequest) (head, error) {
	response, err := statewrightv1.NewWorkflowServiceClient(conn).ResumeWorkflow(ctx, request)
	return headOf(response.GetWorkflow()), err
}

// requestID is uuid4().hex's shape: 32 hex digits.
func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return hex.EncodeToString(b[:])
}

func (c *client) withID(request *statewrightv1.StartWorkflowRequest) *statewrightv1.StartWorkflowRequest {
	if !c.plan.requestIDs {
		return request // shared, read-only: concurrent marshalling of it is safe
	}
	return &statewrightv1.StartWorkflowRequest{
		Definition: request.Definition, Version: request.Version, Input: request.Input,
		RequestId: requestID(),
	}
}

func (c *client) startOrder(ctx context.Context, t0 time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	response, err := c.startWorkflow(ctx, c.conn(), c.withID(c.order))
	if err != nil {
		return err
	}
	now := time.Now()
	if response.status != statewrightv1.WorkflowStatus_WORKFLOW_STATUS_COMPLETED {
		c.rec.error("not-completed")
		return nil
	}
	c.rec.record(now, now.Sub(t0).Seconds(), 0, 0, false, false)
	return nil
}

func (c *client) startMail(ctx context.Context, conn *grpc.ClientConn) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	response, err := c.startWorkflow(ctx, conn, c.withID(c.mail))
	if err != nil {
		return "", err
	}
	if s := response.status; s != statewrightv1.WorkflowStatus_WORKFLOW_STATUS_WAITING {
		return "", runtimeError(fmt.Sprintf("mail-approval started in status %d", int32(s)))
	}
	return response.name, nil
}

func (c *client) resume(ctx context.Context, conn *grpc.ClientConn, name string) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	request := &statewrightv1.ResumeWorkflowRequest{Name: name, Event: "approve", Input: c.approve}
	if c.plan.requestIDs {
		request.RequestId = requestID()
	}
	response, err := c.resumeWorkflow(ctx, conn, request)
	if err != nil {
		return err
	}
	if s := response.status; s != statewrightv1.WorkflowStatus_WORKFLOW_STATUS_COMPLETED {
		return runtimeError(fmt.Sprintf("resume left status %d", int32(s)))
	}
	return nil
}

func (c *client) humanInTheLoop(ctx context.Context, t0 time.Time) error {
	conn := c.conn() // sticky: the start and the resume of this workflow both go here
	name, err := c.startMail(ctx, conn)
	if err != nil {
		return err
	}
	t1 := time.Now()
	if err := c.resume(ctx, conn, name); err != nil {
		return err
	}
	now := time.Now()
	c.rec.record(now, now.Sub(t0).Seconds(), t1.Sub(t0).Seconds(), now.Sub(t1).Seconds(), true, true)
	return nil
}

func (c *client) resumeParked(ctx context.Context, t0 time.Time) error {
	c.parkedMu.Lock()
	if len(c.parked) == 0 {
		c.parkedMu.Unlock()
		c.rec.mu.Lock()
		if c.rec.exhaustedAt.IsZero() {
			c.rec.exhaustedAt = time.Now()
		}
		c.rec.mu.Unlock()
		return errExhausted
	}
	instance := c.parked[len(c.parked)-1]
	c.parked = c.parked[:len(c.parked)-1]
	c.parkedMu.Unlock()
	if err := c.resume(ctx, instance.conn, instance.name); err != nil {
		return err
	}
	now := time.Now()
	latency := now.Sub(t0).Seconds()
	c.rec.record(now, latency, 0, latency, false, true)
	return nil
}

type operation func(ctx context.Context, t0 time.Time) error

// codeNames are Python's grpc.StatusCode names, which loadgen.py counts errors under.
var codeNames = map[codes.Code]string{
	codes.OK:                 "OK",
	codes.Canceled:           "CANCELLED",
	codes.Unknown:            "UNKNOWN",
	codes.InvalidArgument:    "INVALID_ARGUMENT",
	codes.DeadlineExceeded:   "DEADLINE_EXCEEDED",
	codes.NotFound:           "NOT_FOUND",
	codes.AlreadyExists:      "ALREADY_EXISTS",
	codes.PermissionDenied:   "PERMISSION_DENIED",
	codes.ResourceExhausted:  "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION",
	codes.Aborted:            "ABORTED",
	codes.OutOfRange:         "OUT_OF_RANGE",
	codes.Unimplemented:      "UNIMPLEMENTED",
	codes.Internal:           "INTERNAL",
	codes.Unavailable:        "UNAVAILABLE",
	codes.DataLoss:           "DATA_LOSS",
	codes.Unauthenticated:    "UNAUTHENTICATED",
}

// guarded runs one operation and counts its failure as loadgen.py's _guarded does: by gRPC
// status code name, or by the first 60 characters of a RuntimeError's text. A call this
// process cancelled itself (the end of the run) is not counted, as asyncio's cancellation
// is not. It returns errExhausted so that a closed-loop lane can stop.
func (c *client) guarded(ctx context.Context, op operation, t0 time.Time) error {
	err := op(ctx, t0)
	if err == nil || errors.Is(err, errExhausted) {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	var text runtimeError
	if errors.As(err, &text) {
		key := string(text)
		if len(key) > 60 {
			key = key[:60]
		}
		c.rec.error(key)
		return nil
	}
	c.rec.error(codeName(status.Code(err)))
	return nil
}

func codeName(code codes.Code) string {
	if name, ok := codeNames[code]; ok {
		return name
	}
	return strings.ToUpper(code.String())
}

// -- load shapes ------------------------------------------------------------------------

func (c *client) closedLoop(ctx context.Context, op operation, lanes int) {
	var wg sync.WaitGroup
	for range lanes {
		wg.Go(func() {
			for time.Now().Before(c.rec.end) && ctx.Err() == nil {
				if errors.Is(c.guarded(ctx, op, time.Now()), errExhausted) {
					return
				}
			}
		})
	}
	wg.Wait()
}

func (c *client) openLoop(ctx context.Context, op operation, rate float64, start time.Time, phase float64, limit int) {
	interval := 1.0 / rate
	rec := c.rec
	calls, cancel := context.WithCancel(ctx)
	defer cancel()
	// Sends go to long-lived workers, started as needed so that there is always one free
	// for each call in flight: a goroutine per call would grow a fresh stack every time.
	jobs := make(chan time.Time, limit)
	var inflight atomic.Int64
	var workers sync.WaitGroup
	spawned := 0
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var behind float64
	capped := 0
	// Processes interleave their schedules (phase in [0, 1)) so the total is evenly spaced.
	// Each send time is computed from the start, not accumulated, so it does not drift.
	for n := 0; ; n++ {
		scheduled := start.Add(seconds((phase + float64(n)) * interval))
		if !scheduled.Before(rec.end) || ctx.Err() != nil {
			break
		}
		if delay := time.Until(scheduled); delay > 0 {
			timer.Reset(delay)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
			}
		} else {
			behind = math.Max(behind, -delay.Seconds())
		}
		if inflight.Load() >= int64(limit) {
			capped++
			continue
		}
		if running := inflight.Add(1); int64(spawned) < running {
			spawned++
			workers.Go(func() {
				for t0 := range jobs {
					_ = c.guarded(calls, op, t0)
					inflight.Add(-1)
				}
			})
		}
		jobs <- scheduled // never blocks: at most limit calls are queued or running
	}
	close(jobs)
	rec.mu.Lock()
	rec.behindMax = math.Max(rec.behindMax, behind)
	rec.capped += capped
	rec.mu.Unlock()
	// Wait for the calls in flight until 5 s past the window, then cancel the rest.
	done := make(chan struct{})
	go func() { workers.Wait(); close(done) }()
	drain := time.NewTimer(time.Until(rec.end.Add(openDrain)))
	defer drain.Stop()
	select {
	case <-done:
	case <-drain.C:
		cancel()
		<-done
	case <-ctx.Done():
		<-done
	}
}

// -- the process ------------------------------------------------------------------------

func connect(p plan) ([]*grpc.ClientConn, error) {
	var conns []*grpc.ClientConn
	// Each ClientConn has its own HTTP/2 connection, as grpc.use_local_subchannel_pool gives
	// loadgen.py's channels: channel i goes to target i % len(targets), and with one shared
	// (SO_REUSEPORT) target several channels may reach several server processes.
	// No service config: like loadgen.py's plain channels, no retries, no default timeouts.
	options, err := dialOptions(p)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	for _, target := range channelTargets(p.targets, p.channels) {
		conn, err := grpc.NewClient(target, options...)
		if err != nil {
			closeAll(conns)
			return nil, fmt.Errorf("channel to %s: %w", target, err)
		}
		conns = append(conns, conn)
		conn.Connect()
		for state := conn.GetState(); state != connectivity.Ready; state = conn.GetState() {
			if !conn.WaitForStateChange(ctx, state) {
				closeAll(conns)
				return nil, fmt.Errorf("channel to %s not ready within %s (last state %s)", target, connectTimeout, state)
			}
		}
	}
	return conns, nil
}

func closeAll(conns []*grpc.ClientConn) {
	for _, conn := range conns {
		_ = conn.Close()
	}
}

// park starts --prepare mail-approval instances (WAITING), --concurrency at a time, each
// on the next channel round robin, and remembers that channel for its resume; any failure
// fails the process, as in loadgen.py.
func (c *client) park(ctx context.Context) error {
	parked := make([]parkedInstance, c.plan.prepare)
	errs := make(chan error, c.plan.prepare)
	sem := make(chan struct{}, c.plan.concurrency)
	var wg sync.WaitGroup
	for i := range c.plan.prepare {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			conn := c.conn()
			name, err := c.startMail(ctx, conn)
			if err != nil {
				errs <- err
				return
			}
			parked[i] = parkedInstance{name: name, conn: conn}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("parking WAITING instances: %w", err)
	}
	c.parked = parked
	return nil
}

// startTime signals readiness and returns the common start time.
func startTime(p plan) (time.Time, error) {
	if p.readyFD <= 0 {
		return time.Now().Add(500 * time.Millisecond), nil
	}
	ready := os.NewFile(uintptr(p.readyFD), "ready")
	if ready == nil {
		return time.Time{}, fmt.Errorf("--ready-fd %d is not open", p.readyFD)
	}
	if _, err := ready.WriteString("ready\n"); err != nil {
		return time.Time{}, fmt.Errorf("signalling ready: %w", err)
	}
	_ = ready.Close()
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		lines <- line
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(startTimeout):
		return time.Time{}, errors.New("no start time on stdin")
	}
	at, err := strconv.ParseFloat(strings.TrimSpace(line), 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("start time on stdin: %q", line)
	}
	// Anchor the wall-clock start time to the monotonic clock: every later comparison
	// and latency uses monotonic readings.
	now := time.Now()
	wall := float64(now.UnixNano()) / 1e9
	return now.Add(seconds(at - wall)), nil
}

func run(p plan) (*report, error) {
	conns, err := connect(p)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	c := newClient(p, conns)
	if p.scenario == "resume" {
		if err := c.park(context.Background()); err != nil {
			return nil, err
		}
	}
	t0, err := startTime(p)
	if err != nil {
		return nil, err
	}
	begin := t0.Add(seconds(p.warmup))
	rec := &recorder{
		begin:           begin,
		end:             begin.Add(seconds(p.duration)),
		latencies:       []float64{},
		startLatencies:  []float64{},
		resumeLatencies: []float64{},
		errors:          map[string]int{},
		seriesEvery:     seconds(p.seriesEvery),
	}
	c.rec = rec
	// Bound everything in time: after the window and one call timeout (plus slack) the
	// calls still running are cancelled; if the process is still not done soon after, it
	// gives up without a report.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	soft := rec.end.Add(max(c.timeout, openDrain) + 5*time.Second)
	halt := time.AfterFunc(time.Until(soft), stop)
	defer halt.Stop()
	hard := time.AfterFunc(time.Until(soft.Add(10*time.Second)), func() {
		fmt.Fprintf(os.Stderr, "goload: process %d: still running %s after the window; giving up\n",
			p.index, time.Since(rec.end).Round(time.Second))
		os.Exit(3)
	})
	defer hard.Stop()

	op := map[string]operation{
		"start": c.startOrder, "echo": c.startOrder, "hitl": c.humanInTheLoop, "resume": c.resumeParked,
	}[p.scenario]

	// CPU at the window's start and end; taken early if the loop ends first (pool ran out).
	var samples []float64
	var samplesMu sync.Mutex
	stopSampler := make(chan struct{})
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		for _, moment := range []time.Time{rec.begin, rec.end} {
			timer := time.NewTimer(time.Until(moment))
			select {
			case <-timer.C:
				samplesMu.Lock()
				samples = append(samples, cpuSeconds())
				samplesMu.Unlock()
			case <-stopSampler:
				timer.Stop()
				return
			}
		}
	}()

	time.Sleep(time.Until(t0))
	if p.rate > 0 {
		perProcess := p.rate / float64(p.processes)
		phase := float64(p.index) / float64(p.processes)
		c.openLoop(ctx, op, perProcess, t0, phase, p.concurrency)
	} else {
		c.closedLoop(ctx, op, p.concurrency)
	}
	select {
	case <-samplerDone:
	default:
		close(stopSampler)
		<-samplerDone
		samples = append(samples, cpuSeconds())
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	windowEnd := rec.end
	if !rec.exhaustedAt.IsZero() && rec.exhaustedAt.Before(rec.end) {
		windowEnd = rec.exhaustedAt
		rec.errors["pool-exhausted"]++
	}
	rep := &report{
		Index:           p.index,
		Ops:             rec.ops,
		Window:          math.Max(1e-9, windowEnd.Sub(rec.begin).Seconds()),
		Latencies:       rec.latencies,
		StartLatencies:  rec.startLatencies,
		ResumeLatencies: rec.resumeLatencies,
		Errors:          rec.errors,
		BehindMax:       rec.behindMax,
		Capped:          rec.capped,
		Series:          rec.series,
	}
	if len(samples) == 2 {
		rep.CPUSeconds = samples[1] - samples[0]
	}
	if p.scenario == "resume" {
		rep.Prepared = p.prepare
	}
	return rep, nil
}
