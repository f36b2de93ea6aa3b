package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	pb "github.com/statewright/statewright/clients/go/statewright/v1"
)

// The kinds of fault the nemesis injects.
const (
	faultKill        = "kill"                 // SIGKILL a replica, then start it again
	faultDrain       = "drain"                // SIGTERM a replica (a graceful drain, as a rolling restart does), then start it
	faultPause       = "pause"                // SIGSTOP a replica past every lease and claim, then SIGCONT
	faultPGFast      = "pg-restart-fast"      // PostgreSQL stopped cleanly (-m fast) and started
	faultPGImmediate = "pg-restart-immediate" // PostgreSQL stopped without shutdown (-m immediate): crash recovery
	faultCutAfter    = "cut-after-commit"     // a step's connection cut once its COMMIT was sent
	faultCutBefore   = "cut-before-commit"    // a step's connection cut just before its COMMIT
	faultStall       = "stall"                // the proxy holds all database traffic for a while
	faultFlood       = "flood"                // a burst of starts, while commits are slow, that overfills a writer queue
	// Citus only (--db citus): a worker node stopped (fast or immediate, by turns) and
	// started, while the coordinator and the other worker go on.
	faultWorkerRestart = "worker-restart"
)

var allFaults = []string{faultKill, faultDrain, faultPause, faultPGFast, faultPGImmediate, faultCutAfter, faultCutBefore, faultStall, faultFlood}

// faultGroup says which faults may overlap: only faults of different groups.
var faultGroup = map[string]string{
	faultKill: "replica", faultDrain: "replica", faultPause: "replica",
	faultPGFast: "db", faultPGImmediate: "db", faultStall: "db",
	faultCutAfter: "conn", faultCutBefore: "conn",
	faultFlood: "load", faultWorkerRestart: "db",
}

type nemesis struct {
	replicas []*replica
	pg       database // nil: the database is not ours to restart
	proxy    *pgProxy
	conns    []*replicaConn
	hist     *jsonl // the probes' and the flood's invocations
	log      *jsonl // the faults
	rng      *rand.Rand
	pause    time.Duration
	floodN   int
	seq      atomic.Int64
	faults   int
	mu       sync.Mutex
	records  []FaultRec
	busy     map[*replica]bool // under a replica fault right now
}

// target picks a replica for a replica fault and marks it busy until done is called.
func (n *nemesis) target() (*replica, func()) {
	n.mu.Lock()
	r := n.replicas[n.rng.IntN(len(n.replicas))]
	if n.busy == nil {
		n.busy = map[*replica]bool{}
	}
	n.busy[r] = true
	n.mu.Unlock()
	return r, func() { n.mu.Lock(); delete(n.busy, r); n.mu.Unlock() }
}

// serving picks a replica no replica fault is on (a flood at a replica being killed would
// reach no writer queue), or any if every one is.
func (n *nemesis) serving() *replica {
	n.mu.Lock()
	defer n.mu.Unlock()
	var free []*replica
	for _, r := range n.replicas {
		if !n.busy[r] {
			free = append(free, r)
		}
	}
	if len(free) == 0 {
		free = n.replicas
	}
	return free[n.rng.IntN(len(free))]
}

// plan is the order of faults: each kind once per round, shuffled, for as many rounds as
// asked; with overlap, some faults start while the one before is still on.
func (n *nemesis) plan(kinds []string, rounds int) []string {
	var out []string
	for r := 0; r < rounds; r++ {
		round := append([]string(nil), kinds...)
		n.rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		out = append(out, round...)
	}
	return out
}

// run injects the planned faults one after another (some overlapping when overlap is
// set), with a gap between them, until the plan is done or ctx ends. Each fault is healed
// before run returns. A fault that did not take effect (a flood whose replica another
// fault had just taken down, say) is tried again at the end of the plan, up to twice: the
// run promises each planned fault with effect, and the checker holds it to that.
func (n *nemesis) run(ctx context.Context, plan []string, gap time.Duration, overlap float64) {
	again := map[string]int{}
	retry := func(recs ...FaultRec) {
		for _, r := range recs {
			if r.Err != "" && again[r.Kind] < 2 {
				again[r.Kind]++
				plan = append(plan, r.Kind)
			}
		}
	}
	for i := 0; i < len(plan) && ctx.Err() == nil; i++ {
		sleepCtx(ctx, gap/2+time.Duration(n.rng.Int64N(int64(gap))))
		if ctx.Err() != nil {
			return
		}
		kind := plan[i]
		if i+1 < len(plan) && faultGroup[plan[i+1]] != faultGroup[kind] && n.rng.Float64() < overlap {
			// Two faults at once: the second begins while the first is on.
			second := plan[i+1]
			i++
			var wg sync.WaitGroup
			recs := make([]FaultRec, 2)
			delay := time.Duration(200+n.rng.IntN(1500)) * time.Millisecond
			wg.Add(2)
			go func() { defer wg.Done(); recs[0] = n.inject(kind) }()
			go func() { defer wg.Done(); time.Sleep(delay); recs[1] = n.inject(second) }()
			wg.Wait()
			n.settle(recs...)
			retry(recs...)
			continue
		}
		rec := n.inject(kind)
		n.settle(rec)
		retry(rec)
	}
}

// settle waits until every replica serves a write again, and records the faults with
// that time as their recovery.
func (n *nemesis) settle(recs ...FaultRec) {
	recovered := n.probe(60 * time.Second)
	var groupEnd int64
	for _, rec := range recs {
		groupEnd = max(groupEnd, rec.End)
	}
	for _, rec := range recs {
		rec.Recovered = recovered
		rec.GroupEnd = groupEnd
		n.log.write(rec)
		n.mu.Lock()
		n.records = append(n.records, rec)
		n.mu.Unlock()
	}
}

func (n *nemesis) inject(kind string) FaultRec {
	rec := FaultRec{Seq: int(n.seq.Add(1)), Kind: kind, Start: nowNS(), Detail: map[string]string{}}
	var err error
	switch kind {
	case faultKill:
		r, done := n.target()
		defer done()
		rec.Target = r.target()
		r.kill()
		time.Sleep(time.Duration(500+n.rng.IntN(1500)) * time.Millisecond)
		// As a supervisor would: start it again until it serves.
		for attempt := 0; attempt < 3; attempt++ {
			if err = r.start(90 * time.Second); err == nil {
				break
			}
			rec.Detail[fmt.Sprintf("start_%d", attempt)] = err.Error()
		}
	case faultDrain:
		r, done := n.target()
		defer done()
		rec.Target = r.target()
		began := time.Now()
		r.signal(syscall.SIGTERM)
		if !r.wait(30 * time.Second) {
			err = fmt.Errorf("the drain did not end within 30s")
			r.kill()
		}
		rec.Detail["drained_in"] = time.Since(began).Round(time.Millisecond).String()
		for attempt := 0; attempt < 3; attempt++ {
			if serr := r.start(90 * time.Second); serr == nil {
				break
			} else if attempt == 2 {
				err = serr
			}
		}
	case faultPause:
		r, done := n.target()
		defer done()
		rec.Target = r.target()
		if err = r.signal(syscall.SIGSTOP); err == nil {
			time.Sleep(n.pause)
			err = r.signal(syscall.SIGCONT)
		}
		rec.Detail["paused"] = n.pause.String()
	case faultPGFast:
		err = n.pg.restart("fast")
	case faultPGImmediate:
		err = n.pg.restart("immediate")
	case faultWorkerRestart:
		citus, ok := n.pg.(*citusCluster)
		if !ok {
			err = fmt.Errorf("%s needs a Citus cluster", kind)
			break
		}
		i := n.rng.IntN(len(citus.workers))
		mode := [2]string{"fast", "immediate"}[n.rng.IntN(2)]
		rec.Target = fmt.Sprintf("worker-%d", i)
		rec.Detail["mode"] = mode
		err = citus.restartWorker(i, mode)
	case faultCutAfter, faultCutBefore:
		before, refusedBefore := n.proxy.cuts.Load(), n.proxy.refused.Load()
		cuts := 2 + n.rng.IntN(3)
		for i := 0; i < cuts; i++ {
			// The last cut of each fault also takes the database away for a moment, so
			// that the replica cannot read back at once what became of the COMMIT.
			dark := i == cuts-1
			n.proxy.armCut(kind == faultCutAfter, dark)
			deadline := time.Now().Add(10 * time.Second)
			for n.proxy.cuts.Load() == before+int64(i) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if dark {
				time.Sleep(time.Duration(1000+n.rng.IntN(1500)) * time.Millisecond)
			}
			n.proxy.heal()
			time.Sleep(time.Duration(100+n.rng.IntN(400)) * time.Millisecond)
		}
		n.proxy.heal()
		rec.Detail["cuts"] = fmt.Sprint(n.proxy.cuts.Load() - before)
		rec.Detail["refused_connections"] = fmt.Sprint(n.proxy.refused.Load() - refusedBefore)
		if n.proxy.cuts.Load() == before {
			err = fmt.Errorf("no step committed while the cut was armed")
		}
	case faultStall:
		held := n.proxy.held.Load()
		d := time.Duration(3000+n.rng.IntN(2000)) * time.Millisecond
		n.proxy.stall()
		time.Sleep(d)
		n.proxy.resume()
		rec.Detail["stalled"] = d.String()
		rec.Detail["held_messages"] = fmt.Sprint(n.proxy.held.Load() - held)
	case faultFlood:
		// The writer commits faster than one replica takes requests, so its queue fills
		// only while commits are slow: the burst arrives while they are held.
		r := n.serving()
		rec.Target = r.target()
		n.proxy.holdCommits()
		release := time.AfterFunc(time.Duration(1500+n.rng.IntN(1000))*time.Millisecond, n.proxy.resume)
		overloaded, ok := n.flood(r.target(), rec.Seq)
		release.Stop()
		n.proxy.resume()
		rec.Detail["sent"] = fmt.Sprint(n.floodN)
		rec.Detail["overloaded"] = fmt.Sprint(overloaded)
		rec.Detail["ok"] = fmt.Sprint(ok)
		if overloaded == 0 {
			err = fmt.Errorf("the flood of %d starts filled no writer queue", n.floodN)
		}
	default:
		err = fmt.Errorf("unknown fault kind %q", kind)
	}
	rec.End = nowNS()
	if err != nil {
		rec.Err = err.Error()
	}
	n.faults++
	return rec
}

func (n *nemesis) conn(target string) *replicaConn {
	for _, c := range n.conns {
		if c.target == target {
			return c
		}
	}
	return n.conns[0]
}

// flood sends n.floodN starts at once to one replica: each is an invocation of its own,
// recorded like any other, and most of those the writer cannot queue are refused.
func (n *nemesis) flood(target string, seq int) (overloaded, ok int64) {
	// Several connections of its own, as many clients at once would be.
	conns, err := dialAll([]string{target, target, target, target})
	if err != nil {
		return 0, 0
	}
	defer closeAll(conns)
	var wg sync.WaitGroup
	var over, good atomic.Int64
	for i := 0; i < n.floodN; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			wf := fmt.Sprintf("flood-%d-%d", seq, i)
			id := fmt.Sprintf("op-flood-%d-%d", seq, i)
			op := n.call(conns[i%len(conns)], "flood", id, wf, 0)
			switch {
			case op.Outcome == outcomeOK:
				good.Add(1)
			case op.Code == "ResourceExhausted":
				over.Add(1)
			}
		}(i)
	}
	wg.Wait()
	return over.Load(), good.Load()
}

// call starts one account (the probes' and the flood's invocation).
func (n *nemesis) call(rc *replicaConn, proc, id, wf string, try int) Op {
	op := Op{Proc: proc, ID: id, Try: try, Kind: "start", WF: wf, Def: defAccount, Target: rc.target}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	op.Call = nowNS()
	resp, err := rc.wf.StartWorkflow(ctx, &pb.StartWorkflowRequest{
		Definition: defAccount, WorkflowId: wf, Input: mustStruct(map[string]any{"last": id}),
	})
	op.Ret = nowNS()
	if err != nil {
		classify(&op, err)
	} else {
		op.Outcome = outcomeOK
		noteWorkflow(&op, resp.GetWorkflow())
		op.Created = resp.GetCreated()
	}
	n.hist.write(op)
	return op
}

// probe starts a fresh account through every replica until each has answered one: the
// moment the system serves writes everywhere again. It returns that time (Unix ns), or
// 0 if some replica did not answer within limit.
func (n *nemesis) probe(limit time.Duration) int64 {
	seq := n.seq.Add(1)
	deadline := time.Now().Add(limit)
	var last int64
	for i, rc := range n.conns {
		for try := 0; ; try++ {
			id := fmt.Sprintf("op-probe-%d-%d-%d", seq, i, try)
			op := n.call(rc, "probe", id, fmt.Sprintf("probe-%d-%d-%d", seq, i, try), 0)
			if op.Outcome == outcomeOK {
				if op.Ret > last {
					last = op.Ret
				}
				break
			}
			if time.Now().After(deadline) {
				return 0
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return last
}
