package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/statewright/statewright/clients/go/statewright"
	pb "github.com/statewright/statewright/clients/go/statewright/v1"
)

// watcher follows instances with WatchWorkflow, the way a careful client does: from
// revision 0, and after any interruption (a replica killed or paused, a drain, a stream it
// closes itself on purpose) again from the last revision it received, through whichever
// replica answers. Every message is recorded; the checker decides whether the stream of
// each instance was complete, in order and without duplicates.
type watcher struct {
	proc    string
	rt      *router
	hist    *jsonl
	lay     layout
	streams atomic.Int64
	msgs    atomic.Int64
	mu      sync.Mutex
	final   map[string]int64 // once set: the revisions to reach before stopping
	settled chan struct{}
}

func watchMain(args []string) error {
	fs := flag.NewFlagSet("watch", flag.ExitOnError)
	var lay layout
	addLayoutFlags(fs, &lay)
	targets := fs.String("targets", "", "replicas, comma-separated")
	proc := fs.String("proc", "v0", "this process's name in the history")
	seed := fs.Uint64("seed", 1, "random seed")
	out := fs.String("out", "", "watch log to write")
	perEpoch := fs.String("watch", "all", "accounts,orders,countdowns of each epoch to watch, or all of them")
	duration := fs.Duration("duration", time.Minute, "until when new epochs' instances are watched")
	finalPath := fs.String("final", "", "on SIGUSR1: a JSON map of workflow id to final revision to reach, then exit (SIGUSR2: the load is over)")
	finalWait := fs.Duration("final-wait", 45*time.Second, "how long streams may take to reach their final revisions")
	restLimit := fs.Duration("rest-limit", 6*time.Minute, "how long, at most, following the instances no epoch listed may take once the run has settled")
	fs.Parse(args)
	na, no, nt := lay.Accounts, lay.Orders, lay.Timers
	if *perEpoch != "all" {
		if _, err := fmt.Sscanf(*perEpoch, "%d,%d,%d", &na, &no, &nt); err != nil {
			return fmt.Errorf("--watch: %w", err)
		}
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
	v := &watcher{proc: *proc, rt: newRouter(conns, *seed), hist: hist, lay: lay, settled: make(chan struct{})}
	// base ends on SIGTERM; ctx, the epochs' live streams, also once they had their time
	// to reach their final revisions.
	base, stop := context.WithCancel(context.Background())
	defer stop()
	ctx, cancel := context.WithCancel(base)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1, syscall.SIGUSR2)
	loadDone := make(chan struct{})
	go func() {
		for s := range sigs {
			if s == syscall.SIGUSR2 {
				close(loadDone) // the load is over: no new epoch will have instances
				continue
			}
			if s == syscall.SIGUSR1 && *finalPath != "" {
				final := map[string]int64{}
				if data, err := os.ReadFile(*finalPath); err == nil && json.Unmarshal(data, &final) == nil {
					v.mu.Lock()
					v.final = final
					v.mu.Unlock()
					close(v.settled)
					// Whatever has not caught up within this has a problem the checker reports.
					time.AfterFunc(*finalWait, cancel)
					continue
				}
			}
			stop()
			return
		}
	}()
	var wg sync.WaitGroup
	until := time.Now().Add(*duration)
	rng := rand.New(rand.NewPCG(*seed, 3))
	followed := map[string]bool{}
	for epoch := 0; ; epoch++ {
		begins := time.Unix(0, lay.Start+int64(epoch)*int64(lay.Epoch))
		if begins.After(until) {
			break
		}
		select {
		case <-time.After(time.Until(begins)):
		case <-ctx.Done():
		case <-v.settled:
		case <-loadDone:
		}
		if ctx.Err() != nil || v.isSettling() || isClosed(loadDone) {
			break
		}
		for _, w := range [][2]any{{"acct", na}, {"order", no}, {"tick", nt}} {
			for k := 0; k < w[1].(int); k++ {
				wf := instanceID(w[0].(string), epoch, k)
				followed[wf] = true
				wg.Add(1)
				s := rng.Uint64()
				go func() { defer wg.Done(); v.follow(ctx, rand.New(rand.NewPCG(s, 9)), wf) }()
			}
		}
	}
	if *perEpoch == "all" {
		// Every other instance the run made (the floods', the probes', any the load
		// reached that no epoch listed), once the run has settled: from revision 0, each to
		// its final revision, a few at a time.
		select {
		case <-v.settled:
		case <-ctx.Done():
		}
		if base.Err() == nil {
			v.followRest(base, rng, followed, *finalWait, *restLimit)
		}
	}
	wg.Wait()
	cancel()
	if err := hist.close(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "watch %s: %d streams, %d messages\n", v.proc, v.streams.Load(), v.msgs.Load())
	return nil
}

func (v *watcher) isSettling() bool { return isClosed(v.settled) }

// followRest follows, restSlots at a time, every instance of the final revisions that the
// epochs did not list. These are read back from revision 0 after the run, thousands on a
// long one: a fixed time for all of them measured the cluster's speed (a loaded Citus
// coordinator served a few dozen a second), not whether each stream is whole. So it goes
// on while instances keep arriving at their final revisions, and gives up (what is left is
// reported as never followed) once none has for stall, or after limit in all.
func (v *watcher) followRest(base context.Context, rng *rand.Rand, followed map[string]bool, stall, limit time.Duration) {
	ctx, cancel := context.WithTimeout(base, limit)
	defer cancel()
	var progress atomic.Int64
	progress.Store(nowNS())
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if time.Duration(nowNS()-progress.Load()) > stall {
					cancel()
					return
				}
			}
		}
	}()
	v.mu.Lock()
	var rest []string
	for wf := range v.final {
		if !followed[wf] {
			rest = append(rest, wf)
		}
	}
	v.mu.Unlock()
	sort.Strings(rest)
	slots := make(chan struct{}, restSlots)
	var wg sync.WaitGroup
	for _, wf := range rest {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Add(1)
		s := rng.Uint64()
		go func() {
			defer func() { <-slots; wg.Done() }()
			v.follow(ctx, rand.New(rand.NewPCG(s, 9)), wf)
			progress.Store(nowNS())
		}()
	}
	wg.Wait()
}

// restSlots: streams at once for the instances followed only once the run has settled.
const restSlots = 48

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// reached says whether following wf may stop: the run is settling and wf's final
// revision has arrived (or wf was never created).
func (v *watcher) reached(wf string, last int64) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.final == nil {
		return false
	}
	return last >= v.final[wf]
}

func (v *watcher) follow(ctx context.Context, rng *rand.Rand, wf string) {
	var last atomic.Int64
	notFound, exhausted, unavailable := 0, 0, 0
	for session := 0; ctx.Err() == nil; session++ {
		if v.reached(wf, last.Load()) {
			return
		}
		rc := v.rt.pick()
		v.hist.write(WatchRec{Proc: v.proc, WF: wf, Session: session, What: "open", After: last.Load(), Target: rc.target, T: nowNS()})
		ended, err := v.stream(ctx, rng, rc, wf, session, &last)
		if ended {
			v.hist.write(WatchRec{Proc: v.proc, WF: wf, Session: session, What: "end", Rev: last.Load(), T: nowNS()})
			return
		}
		rec := WatchRec{Proc: v.proc, WF: wf, Session: session, What: "error", Rev: last.Load(), Target: rc.target, T: nowNS(), Code: "closed"}
		if err != nil {
			rec.Code = status.Code(err).String()
			if r := statewright.Reason(err); r != "" {
				rec.Code += " " + r
			}
		}
		v.hist.write(rec)
		if status.Code(err) == codes.NotFound && last.Load() == 0 {
			// Not started yet (or never will be): look again in a while, less often as
			// time goes by, up to half a minute: an id whose start failed is never
			// created, and asking every few seconds for the whole run made most of the
			// watcher's opens on a long one.
			notFound++
			sleepCtx(ctx, time.Duration(min(notFound, 30))*time.Duration(500+rng.IntN(500))*time.Millisecond)
			continue
		}
		if status.Code(err) == codes.ResourceExhausted {
			// The replica has as many streams open as it allows (TOO_MANY_WATCHES): a
			// client that came straight back would only add to its load. Back off, longer
			// each time, as any client should.
			exhausted++
			sleepCtx(ctx, time.Duration(min(exhausted, 8))*time.Duration(500+rng.IntN(500))*time.Millisecond)
			continue
		}
		exhausted = 0
		op := Op{}
		if err != nil {
			classify(&op, err)
		}
		v.rt.failed(rc, &op)
		if status.Code(err) == codes.Unavailable {
			// The replica cannot serve the open now (its storage did not answer in time,
			// or it is draining): coming back within a few hundred milliseconds, across
			// thousands of followed instances, only adds to the load that slowed it.
			unavailable++
			sleepCtx(ctx, time.Duration(min(unavailable, 8))*time.Duration(250+rng.IntN(250))*time.Millisecond)
			continue
		}
		unavailable = 0
		sleepCtx(ctx, time.Duration(50+rng.IntN(250))*time.Millisecond)
	}
}

// stream runs one WatchWorkflow call after *last; ended is true once the instance's
// terminal revision has arrived.
func (v *watcher) stream(ctx context.Context, rng *rand.Rand, rc *replicaConn, wf string, session int, last *atomic.Int64) (ended bool, err error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	after := last.Load()
	st, err := rc.wf.WatchWorkflow(sctx, &pb.WatchWorkflowRequest{Name: "workflows/" + wf, AfterRevision: &after})
	if err != nil {
		return false, err
	}
	v.streams.Add(1)
	// Some streams are closed on purpose after a few messages, to reconnect.
	closeAfter := -1
	if rng.Float64() < 0.3 {
		closeAfter = 1 + rng.IntN(6)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		// A stream idle while settling ends once its final revision is known to be here.
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if v.reached(wf, last.Load()) {
					cancel()
					return
				}
			}
		}
	}()
	for n := 0; ; n++ {
		msg, err := st.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return false, nil
			}
			return false, err
		}
		v.msgs.Add(1)
		w := msg.GetWorkflow()
		rec := WatchRec{Proc: v.proc, WF: wf, Session: session, What: "msg", Rev: msg.GetRevision(),
			Type: msg.GetType().String(), Event: msg.GetEvent(), T: nowNS()}
		op := Op{}
		noteWorkflow(&op, w)
		rec.State, rec.Status, rec.Last, rec.Ctx = op.State, op.Status, op.Last, op.Ctx
		v.hist.write(rec)
		last.Store(msg.GetRevision())
		switch rec.Status {
		case "COMPLETED", "FAILED", "CANCELLED":
			return true, nil
		}
		if v.reached(wf, msg.GetRevision()) {
			return true, nil // settled, and its final revision is here
		}
		if n+1 == closeAfter {
			return false, nil
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}
