package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/statewright/statewright/clients/go/statewright/v1"
)

// layout names the instances of a run: each epoch (a slice of the run's time) has its own
// accounts, orders and countdowns, so that every process, knowing only the run's start,
// addresses the same instances, and instances come and go as the run goes on.
type layout struct {
	Start    int64         // Unix nanoseconds
	Epoch    time.Duration // length of one epoch
	Accounts int           // instances of each kind per epoch
	Orders   int
	Timers   int
}

func (l layout) epochAt(t time.Time) int {
	if d := t.UnixNano() - l.Start; d > 0 {
		return int(d / int64(l.Epoch))
	}
	return 0
}

// age is how far into its epoch t is, from 0 to 1.
func (l layout) age(t time.Time) float64 {
	d := t.UnixNano() - l.Start
	if d < 0 {
		return 0
	}
	return float64(d%int64(l.Epoch)) / float64(l.Epoch)
}

const (
	defAccount = "chaos-account"
	defOrder   = "chaos-order"
	defTimer   = "chaos-timer"
	defLimited = "chaos-limited" // tasks of the flow-controlled queue (sidework.go)
	defFire    = "chaos-fire"    // what the run's schedule starts (sidework.go)
	defBatch   = "chaos-batch"   // a fan-out, then a child workflow (family.go)
	defKid     = "chaos-kid"     // chaos-batch's child
	defTally   = "chaos-tally"   // what batch operations and resets work on (bulk.go)
)

var prefixDef = map[string]string{"acct": defAccount, "order": defOrder, "tick": defTimer, "flood": defAccount, "probe": defAccount, "limit": defLimited, "batch": defBatch, "tally": defTally}

func instanceID(prefix string, epoch, k int) string { return fmt.Sprintf("%s-%d-%d", prefix, epoch, k) }

func addLayoutFlags(fs *flag.FlagSet, l *layout) {
	fs.Int64Var(&l.Start, "epoch-start", 0, "Unix nanoseconds of the run's start")
	fs.DurationVar(&l.Epoch, "epoch", 12*time.Second, "length of an epoch")
	fs.IntVar(&l.Accounts, "accounts", 24, "accounts per epoch")
	fs.IntVar(&l.Orders, "orders", 12, "orders per epoch")
	fs.IntVar(&l.Timers, "timers", 8, "countdowns per epoch")
}

func layoutArgs(l layout) []string {
	return []string{
		"--epoch-start", fmt.Sprint(l.Start), "--epoch", l.Epoch.String(),
		"--accounts", fmt.Sprint(l.Accounts), "--orders", fmt.Sprint(l.Orders), "--timers", fmt.Sprint(l.Timers),
	}
}

// known is what a client process last learned about an instance (any of its lanes).
type known struct {
	rev    int64
	status string
}

type client struct {
	proc     string
	rt       *router
	hist     *jsonl
	lay      layout
	timeout  time.Duration
	budget   int64
	deadline time.Time
	lim      *limiter
	done     atomic.Int64
	seq      atomic.Int64
	mu       sync.Mutex
	know     map[string]known
	raced    map[string]int64 // per instance: the due time of the last timer raced
	chain    map[string]int   // per instance: races in a row, each armed by the one before
	races    sync.WaitGroup
	lat      latencies  // of accepted signals: when a racing call is sent
	hold     bool       // after the budget, go on until released (the faults are over)
	mix      [3]float64 // shares of accounts, orders, countdowns
}

// defaultMix: most operations on accounts (signals, resumes, reads: the register), the
// rest on orders (tasks) and countdowns (timers).
const defaultMix = "66,17,17"

// parseMix reads "accounts,orders,countdowns" (weights, in any unit) as shares.
func parseMix(s string) ([3]float64, error) {
	var w [3]float64
	if _, err := fmt.Sscanf(s, "%g,%g,%g", &w[0], &w[1], &w[2]); err != nil {
		return w, fmt.Errorf("--mix %q: want accounts,orders,countdowns: %w", s, err)
	}
	total := w[0] + w[1] + w[2]
	if total <= 0 || w[0] < 0 || w[1] < 0 || w[2] < 0 {
		return w, fmt.Errorf("--mix %q: the weights must be positive", s)
	}
	for i := range w {
		w[i] /= total
	}
	return w, nil
}

// latencies keeps the latest calls' latencies; their median is what a racing call aims
// by (a mean would follow the slow tail).
type latencies struct {
	mu   sync.Mutex
	ring [64]time.Duration
	n    int
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.ring[l.n%len(l.ring)] = d
	l.n++
	l.mu.Unlock()
}

func (l *latencies) median() time.Duration {
	l.mu.Lock()
	recent := append([]time.Duration(nil), l.ring[:min(l.n, len(l.ring))]...)
	l.mu.Unlock()
	if len(recent) == 0 {
		return 0
	}
	sort.Slice(recent, func(i, j int) bool { return recent[i] < recent[j] })
	return recent[len(recent)/2]
}

// holdReleased: SIGUSR1 came, the run's faults are over (set before any client exists, so
// a process-wide flag).
var holdReleased atomic.Bool

// more says whether a lane makes another invocation: until the budget is spent (and, when
// holding, the faults are over), and never past the deadline.
func (c *client) more() bool {
	if !time.Now().Before(c.deadline) {
		return false
	}
	return c.done.Load() < c.budget || (c.hold && !holdReleased.Load())
}

// The timer races: the share of answers arming a timer that get a racing call, and when
// that call is sent, relative to the due time: from raceLead before to raceSpread-raceLead
// after it.
// The call's own latency (from a few milliseconds on a quiet machine to a few hundred on
// a loaded one) decides when it lands: most are sent that long before the moment to land
// in (raceAim after the due time, between the timer's claim and its step's commit, give
// or take raceJitter), as the process last measured its writes' latency; the others
// anywhere from raceLead before the due time to raceSpread-raceLead after it.
const (
	raceShare  = 0.8
	raceChain  = 6
	raceAim    = 25 * time.Millisecond
	raceJitter = 45 * time.Millisecond
	raceLead   = 160 * time.Millisecond
	raceSpread = 190 * time.Millisecond
)

func clientMain(args []string) error {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	var lay layout
	addLayoutFlags(fs, &lay)
	targets := fs.String("targets", "", "replicas, comma-separated")
	proc := fs.String("proc", "c0", "this process's name in the history")
	seed := fs.Uint64("seed", 1, "random seed")
	out := fs.String("out", "", "history file to write")
	lanes := fs.Int("lanes", 8, "concurrent lanes")
	ops := fs.Int64("ops", 1000, "invocations to make, at most")
	duration := fs.Duration("duration", time.Minute, "how long to run, at most")
	rate := fs.Float64("rate", 0, "invocations per second, at most (0: no limit)")
	timeout := fs.Duration("timeout", 5*time.Second, "deadline of each call")
	hold := fs.Bool("hold", false, "once --ops are made, go on until SIGUSR1 (the run's faults are over) or --duration")
	mixFlag := fs.String("mix", defaultMix, "shares of the operations on accounts, orders and countdowns")
	fs.Parse(args)
	mix, err := parseMix(*mixFlag)
	if err != nil {
		return err
	}
	if *hold {
		released := make(chan os.Signal, 1)
		signal.Notify(released, syscall.SIGUSR1)
		go func() { <-released; holdReleased.Store(true) }()
	}
	conns, err := dialAll(splitList(*targets))
	if err != nil {
		return err
	}
	defer closeAll(conns)
	hist, err := createJSONL(*out)
	if err != nil {
		return err
	}
	c := &client{
		proc: *proc, rt: newRouter(conns, *seed), hist: hist, lay: lay, timeout: *timeout,
		budget: *ops, deadline: time.Now().Add(*duration), lim: newLimiter(*rate), know: map[string]known{},
		raced: map[string]int64{}, chain: map[string]int{}, hold: *hold, mix: mix,
	}
	var wg sync.WaitGroup
	for i := 0; i < *lanes; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(*seed, uint64(i)+1))
			for c.more() {
				c.lim.wait()
				c.step(rng)
			}
		}(i)
	}
	wg.Wait()
	c.races.Wait()
	if err := hist.close(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "client %s: %d invocations\n", c.proc, c.done.Load())
	return nil
}

// call is one logical operation: what to send, built once so that every attempt of one
// request id sends the same request.
type call struct {
	kind, wf, def, event string
	rid                  string
	exp                  int64
	existing             bool
	race                 race // the timer this call races, if it does
	send                 func(ctx context.Context, rc *replicaConn, op *Op) error
}

func (c *client) newID() string { return fmt.Sprintf("op-%s-%d", c.proc, c.seq.Add(1)) }

func (c *client) known(wf string) known {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.know[wf]
}

func (c *client) learn(op *Op) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if op.Rev > 0 && op.Rev >= c.know[op.WF].rev {
		c.know[op.WF] = known{op.Rev, op.Status}
	}
}

func (c *client) step(rng *rand.Rand) {
	now := time.Now()
	epoch := c.lay.epochAt(now)
	if epoch > 0 && rng.Float64() < 0.1 {
		epoch-- // a late operation on the last epoch's instances
	}
	late := c.lay.age(now) > 0.6
	r := rng.Float64()
	var wf string
	switch {
	case r < c.mix[0]:
		wf = instanceID("acct", epoch, rng.IntN(c.lay.Accounts))
		c.account(rng, wf, late)
	case r < c.mix[0]+c.mix[1]:
		wf = instanceID("order", epoch, rng.IntN(c.lay.Orders))
		c.order(rng, wf, late)
	default:
		wf = instanceID("tick", epoch, rng.IntN(c.lay.Timers))
		c.countdown(rng, wf, late)
	}
}

func (c *client) account(rng *rand.Rand, wf string, late bool) {
	k := c.known(wf)
	r := rng.Float64()
	switch k.status {
	case "":
		switch {
		case r < 0.45:
			c.start(rng, wf, defAccount, nil, false)
		case r < 0.6:
			c.signalWithStart(rng, wf, rng.Float64() < 0.4)
		case r < 0.85:
			c.get(rng, wf)
		default:
			c.signal(rng, wf, "note")
		}
	case "RUNNING":
		switch {
		case r < 0.33:
			c.signal(rng, wf, "note")
		case r < 0.40:
			c.signalWithStart(rng, wf, false)
		case r < 0.52:
			c.signal(rng, wf, "hold")
		case r < 0.74:
			c.get(rng, wf)
		case r < 0.80:
			c.start(rng, wf, defAccount, nil, rng.Float64() < 0.5)
		case r < 0.84:
			c.resume(rng, wf, k)
		case late && r < 0.90:
			c.signal(rng, wf, "close")
		case late && r < 0.95:
			c.cancel(rng, wf, k)
		default:
			c.signal(rng, wf, "note")
		}
	case "WAITING":
		switch {
		case r < 0.45:
			c.resume(rng, wf, k)
		case r < 0.70:
			c.get(rng, wf)
		case r < 0.80:
			c.signal(rng, wf, "note")
		case r < 0.85:
			c.signal(rng, wf, "hold")
		case late && r < 0.92:
			c.cancel(rng, wf, k)
		default:
			c.start(rng, wf, defAccount, nil, rng.Float64() < 0.5)
		}
	default: // ended
		switch {
		case r < 0.45:
			c.get(rng, wf)
		case r < 0.5:
			c.signalWithStart(rng, wf, false) // refused: the instance has finished
		case r < 0.7:
			c.signal(rng, wf, "note")
		case r < 0.8:
			c.resume(rng, wf, k)
		case r < 0.9:
			c.cancel(rng, wf, k)
		default:
			c.start(rng, wf, defAccount, nil, rng.Float64() < 0.5)
		}
	}
}

func (c *client) order(rng *rand.Rand, wf string, late bool) {
	k := c.known(wf)
	r := rng.Float64()
	input := map[string]any{"rounds": float64(2 + rng.IntN(3))}
	switch k.status {
	case "":
		if r < 0.7 {
			c.start(rng, wf, defOrder, input, false)
		} else {
			c.get(rng, wf)
		}
	case "RUNNING":
		switch {
		case r < 0.5:
			c.get(rng, wf)
		case r < 0.72:
			c.signal(rng, wf, "rush")
		case r < 0.85:
			c.start(rng, wf, defOrder, input, rng.Float64() < 0.5)
		case late && r < 0.95:
			c.cancel(rng, wf, k)
		default:
			c.get(rng, wf)
		}
	default:
		switch {
		case r < 0.6:
			c.get(rng, wf)
		case r < 0.9:
			c.signal(rng, wf, "rush")
		default:
			c.cancel(rng, wf, k)
		}
	}
}

func (c *client) countdown(rng *rand.Rand, wf string, late bool) {
	k := c.known(wf)
	r := rng.Float64()
	input := map[string]any{
		"delay": fmt.Sprintf("%dms", 300+100*rng.IntN(13)),
		"limit": float64(1 + rng.IntN(4)),
	}
	switch k.status {
	case "":
		if r < 0.7 {
			c.start(rng, wf, defTimer, input, false)
		} else {
			c.get(rng, wf)
		}
	case "RUNNING":
		switch {
		case r < 0.45:
			c.get(rng, wf)
		case r < 0.75:
			c.signal(rng, wf, "poke")
		case r < 0.82:
			c.signal(rng, wf, "stop")
		case late && r < 0.87:
			c.cancel(rng, wf, k)
		default:
			c.start(rng, wf, defTimer, input, rng.Float64() < 0.5)
		}
	default:
		switch {
		case r < 0.6:
			c.get(rng, wf)
		case r < 0.9:
			c.signal(rng, wf, "poke")
		default:
			c.signal(rng, wf, "stop")
		}
	}
}

// maybeRID gives half of all writes a request id.
func (c *client) maybeRID(rng *rand.Rand, id string) string {
	if rng.Float64() < 0.5 {
		return "rid-" + id
	}
	return ""
}

func mustStruct(m map[string]any) *structpb.Struct {
	s, err := structpb.NewStruct(m)
	if err != nil {
		panic(err)
	}
	return s
}

func (c *client) start(rng *rand.Rand, wf, def string, input map[string]any, existing bool) {
	id := c.newID()
	fields := map[string]any{"last": id}
	for k, v := range input {
		fields[k] = v
	}
	req := &pb.StartWorkflowRequest{Definition: def, WorkflowId: wf, Input: mustStruct(fields), RequestId: c.maybeRID(rng, id)}
	if existing {
		req.IfExists = pb.IfExistsPolicy_IF_EXISTS_POLICY_RETURN_EXISTING
	}
	c.run(rng, id, call{kind: "start", wf: wf, def: def, rid: req.RequestId, existing: existing,
		send: func(ctx context.Context, rc *replicaConn, op *Op) error {
			resp, err := rc.wf.StartWorkflow(ctx, req)
			if err == nil {
				noteWorkflow(op, resp.GetWorkflow())
				op.Created = resp.GetCreated()
			}
			return err
		}})
}

// signalWithStart delivers a `note` to an account, starting it first when it does not
// exist, in one step. With race, another signal-with-start of its own (another operation,
// another request id) goes at once through the other replica: when the id is new, both
// race to create it, and exactly one may say it did, while both notes are applied.
func (c *client) signalWithStart(rng *rand.Rand, wf string, race bool) {
	if race {
		seed := rng.Uint64()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); c.sendSignalWithStart(rand.New(rand.NewPCG(seed, 13)), wf) }()
		defer wg.Wait()
	}
	c.sendSignalWithStart(rng, wf)
}

func (c *client) sendSignalWithStart(rng *rand.Rand, wf string) {
	id := c.newID()
	req := &pb.SignalWithStartWorkflowRequest{Definition: defAccount, WorkflowId: wf,
		Input: mustStruct(map[string]any{"last": id}), Event: "note",
		Payload: mustStruct(map[string]any{"op": id}), RequestId: c.maybeRID(rng, id)}
	c.run(rng, id, call{kind: "sws", wf: wf, def: defAccount, event: "note", rid: req.RequestId,
		send: func(ctx context.Context, rc *replicaConn, op *Op) error {
			resp, err := rc.wf.SignalWithStartWorkflow(ctx, req)
			if err == nil {
				noteWorkflow(op, resp.GetWorkflow())
				op.Created = resp.GetStarted()
				op.Accepted = resp.GetAccepted()
				if !op.Accepted {
					op.Rejection = resp.GetReason().String()
				}
			}
			return err
		}})
}

func (c *client) signal(rng *rand.Rand, wf, event string) { c.signalAt(rng, wf, event, race{}) }

// race is what a call sent to race a timer knows of it: its due time (the history records
// it) and the replica that armed it, whose scheduler most likely fires it.
type race struct {
	due int64
	via string
}

// signalAt sends a signal, racing r's timer when r is set.
func (c *client) signalAt(rng *rand.Rand, wf, event string, r race) {
	id := c.newID()
	req := &pb.SignalWorkflowRequest{Name: "workflows/" + wf, Event: event, Payload: mustStruct(map[string]any{"op": id}), RequestId: c.maybeRID(rng, id)}
	c.run(rng, id, call{kind: "signal", wf: wf, event: event, rid: req.RequestId, race: r,
		send: func(ctx context.Context, rc *replicaConn, op *Op) error {
			resp, err := rc.wf.SignalWorkflow(ctx, req)
			if err == nil {
				noteWorkflow(op, resp.GetWorkflow())
				op.Accepted = resp.GetAccepted()
				if !op.Accepted {
					op.Rejection = resp.GetReason().String()
				}
			}
			return err
		}})
}

func (c *client) resume(rng *rand.Rand, wf string, k known) { c.resumeAt(rng, wf, k, race{}) }

func (c *client) resumeAt(rng *rand.Rand, wf string, k known, r race) {
	id := c.newID()
	// The definition records the resume's `op` as the step's `last` (after `prev`).
	req := &pb.ResumeWorkflowRequest{Name: "workflows/" + wf, Input: mustStruct(map[string]any{"op": id}), RequestId: c.maybeRID(rng, id)}
	if rng.Float64() < 0.5 {
		req.Event = "release"
	}
	if rng.Float64() < 0.5 && k.rev > 0 {
		req.ExpectedRevision = k.rev
	}
	c.run(rng, id, call{kind: "resume", wf: wf, event: "release", rid: req.RequestId, exp: req.ExpectedRevision, race: r,
		send: func(ctx context.Context, rc *replicaConn, op *Op) error {
			resp, err := rc.wf.ResumeWorkflow(ctx, req)
			if err == nil {
				noteWorkflow(op, resp.GetWorkflow())
			}
			return err
		}})
}

func (c *client) cancel(rng *rand.Rand, wf string, k known) {
	id := c.newID()
	req := &pb.CancelWorkflowRequest{Name: "workflows/" + wf, Reason: id, RequestId: c.maybeRID(rng, id)}
	if rng.Float64() < 0.5 && k.rev > 0 {
		req.ExpectedRevision = k.rev
	}
	c.run(rng, id, call{kind: "cancel", wf: wf, rid: req.RequestId, exp: req.ExpectedRevision,
		send: func(ctx context.Context, rc *replicaConn, op *Op) error {
			resp, err := rc.wf.CancelWorkflow(ctx, req)
			if err == nil {
				noteWorkflow(op, resp.GetWorkflow())
			}
			return err
		}})
}

func (c *client) get(rng *rand.Rand, wf string) {
	req := &pb.GetWorkflowRequest{Name: "workflows/" + wf}
	c.run(rng, c.newID(), call{kind: "get", wf: wf,
		send: func(ctx context.Context, rc *replicaConn, op *Op) error {
			resp, err := rc.wf.GetWorkflow(ctx, req)
			if err == nil {
				noteWorkflow(op, resp.GetWorkflow())
			}
			return err
		}})
}

// run makes the attempts of one logical operation. With a request id it is retried after
// an unknown outcome (as a careful client would), and sometimes sent twice on purpose:
// again after its answer, or twice at once through both replicas.
func (c *client) run(rng *rand.Rand, id string, k call) {
	first := c.rt.pick()
	if k.race.via != "" {
		// Not to the replica that armed the timer, whose scheduler fires it: there the two
		// steps would take turns on the instance. From the other one, the racing step
		// commits between the timer's claim and its step's save, which the store's
		// compare-and-swap sends back to a fresh copy of the instance, where only the
		// timer's fence (is it still armed?) stops it.
		first = c.rt.other(c.rt.byTarget(k.race.via))
	}
	if k.rid != "" && rng.Float64() < 0.08 {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); c.attempt(id, 1, k, c.rt.other(first)) }()
		c.attempt(id, 0, k, first)
		wg.Wait()
		return
	}
	op := c.attempt(id, 0, k, first)
	c.maybeRace(rng, &op)
	if k.rid == "" {
		return
	}
	for try := 1; try <= 2 && op.Outcome == outcomeUnknown && time.Now().Before(c.deadline); try++ {
		time.Sleep(time.Duration(100+rng.IntN(300)) * time.Millisecond)
		op = c.attempt(id, try, k, c.rt.pick())
		c.maybeRace(rng, &op)
	}
	if op.Outcome != outcomeUnknown && rng.Float64() < 0.1 {
		c.attempt(id, op.Try+1, k, c.rt.other(first))
	}
}

// maybeRace sends, now and then, a signal or resume timed to arrive just as the timer
// that op's answer armed comes due: the step that fires the timer and the step that
// leaves (or re-enters) its state then race, and only the timer's fence (it fires only
// while the entry that armed it lasts) keeps a disarmed timer from firing.
func (c *client) maybeRace(rng *rand.Rand, op *Op) {
	if op.Outcome != outcomeOK || op.Due == 0 || rng.Float64() >= raceShare {
		return
	}
	var kind string
	switch {
	case strings.HasPrefix(op.WF, "tick-") && op.State == "ticking" && op.Status == "RUNNING":
		kind = "poke" // re-enters ticking: the old timer is disarmed, a new one armed
		if rng.Float64() < 0.2 {
			kind = "stop"
		}
	case strings.HasPrefix(op.WF, "acct-") && op.State == "held" && op.Status == "WAITING":
		kind = "release"
	default:
		return
	}
	c.mu.Lock()
	// Once per timer; a racing poke's answer arms the next one, which may be raced in turn,
	// up to raceChain times in a row.
	if c.raced[op.WF] >= op.Due || (op.Race != 0 && c.chain[op.WF] >= raceChain) {
		c.mu.Unlock()
		return
	}
	c.raced[op.WF] = op.Due
	if op.Race != 0 {
		c.chain[op.WF]++
	} else {
		c.chain[op.WF] = 0
	}
	c.mu.Unlock()
	due := time.Unix(0, op.Due)
	at := due.Add(time.Duration(rng.IntN(int(raceSpread/time.Millisecond)))*time.Millisecond - raceLead)
	if rng.Float64() < 0.75 {
		jitter := time.Duration(rng.IntN(int(2*raceJitter/time.Millisecond)))*time.Millisecond - raceJitter
		at = due.Add(raceAim + jitter - c.lat.median())
	}
	if at.After(c.deadline) {
		return
	}
	wf, target := op.WF, race{due: op.Due, via: op.Target}
	seed := rng.Uint64()
	c.races.Add(1)
	go func() {
		defer c.races.Done()
		time.Sleep(time.Until(at))
		r := rand.New(rand.NewPCG(seed, 11))
		if kind == "release" {
			c.resumeAt(r, wf, c.known(wf), target)
		} else {
			c.signalAt(r, wf, kind, target)
		}
	}()
}

func (c *client) attempt(id string, try int, k call, rc *replicaConn) Op {
	op := Op{Proc: c.proc, ID: id, Try: try, Kind: k.kind, WF: k.wf, Def: k.def, Event: k.event,
		RID: k.rid, Exp: k.exp, Existing: k.existing, Race: k.race.due, Target: rc.target}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	op.Call = nowNS()
	err := k.send(ctx, rc, &op)
	op.Ret = nowNS()
	cancel()
	if err != nil {
		classify(&op, err)
		c.rt.failed(rc, &op)
	} else {
		op.Outcome = outcomeOK
		c.learn(&op)
		if op.Kind == "signal" && op.Accepted {
			c.lat.add(time.Duration(op.Ret - op.Call))
		}
	}
	c.hist.write(op)
	c.done.Add(1)
	return op
}
