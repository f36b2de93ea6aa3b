package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/statewright/statewright/clients/go/statewright/v1"
)

const (
	taskQueue = "chaos-work"
	mapQueue  = "chaos-map" // chaos-batch's items and chaos-kid's tasks (family.go)
)

// worker leases tasks and answers them in every way a worker may: promptly, twice, late
// (after its lease ran out), with heartbeats, with a failure to retry or one to give up
// on, or not at all. Once told to settle (SIGUSR1) it only completes, promptly, so that
// the run's tasks come to an end.
type worker struct {
	proc     string
	rt       *router
	hist     *jsonl
	timeout  time.Duration
	deadline time.Time
	settle   atomic.Bool
	seq      atomic.Int64
	polls    atomic.Int64
	leased   atomic.Int64
	inflight sync.WaitGroup
}

func workerMain(args []string) error {
	fs := flag.NewFlagSet("worker", flag.ExitOnError)
	targets := fs.String("targets", "", "replicas, comma-separated")
	proc := fs.String("proc", "w0", "this process's name in the history")
	seed := fs.Uint64("seed", 1, "random seed")
	out := fs.String("out", "", "history file to write")
	pollers := fs.Int("pollers", 2, "concurrent polls of the order queue")
	limited := fs.Int("limited-pollers", 2, "concurrent polls of the limited queue (flow control)")
	mapped := fs.Int("map-pollers", 1, "concurrent polls of the fan-out's and the children's queue")
	duration := fs.Duration("duration", time.Minute, "how long to run, at most")
	timeout := fs.Duration("timeout", 5*time.Second, "deadline of each call")
	fs.Parse(args)
	conns, err := dialAll(splitList(*targets))
	if err != nil {
		return err
	}
	defer closeAll(conns)
	hist, err := createJSONL(*out)
	if err != nil {
		return err
	}
	w := &worker{proc: *proc, rt: newRouter(conns, *seed), hist: hist, timeout: *timeout, deadline: time.Now().Add(*duration)}
	stop := make(chan os.Signal, 2)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for s := range stop {
			if s == syscall.SIGUSR1 {
				w.settle.Store(true)
				continue
			}
			cancel()
			return
		}
	}()
	var wg sync.WaitGroup
	for i := 0; i < *pollers+*limited+*mapped; i++ {
		queue := taskQueue
		switch {
		case i >= *pollers+*limited:
			queue = mapQueue
		case i >= *pollers:
			queue = limitedQueue
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			w.poll(ctx, rand.New(rand.NewPCG(*seed, uint64(i)+100)), queue)
		}(i)
	}
	wg.Wait()
	w.inflight.Wait()
	if err := hist.close(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "worker %s: %d polls, %d tasks leased\n", w.proc, w.polls.Load(), w.leased.Load())
	return nil
}

func (w *worker) poll(ctx context.Context, rng *rand.Rand, queue string) {
	for ctx.Err() == nil && time.Now().Before(w.deadline) {
		rc := w.rt.pick()
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		call := nowNS()
		resp, err := rc.tasks.PollTasks(pctx, &pb.PollTasksRequest{
			Queue: queue, Identity: w.proc, MaxTasks: 4, Wait: durationpb.New(time.Second),
		})
		ret := nowNS()
		cancel()
		w.polls.Add(1)
		if err != nil {
			op := Op{}
			classify(&op, err)
			w.rt.failed(rc, &op)
			time.Sleep(time.Duration(50+rng.IntN(200)) * time.Millisecond)
			continue
		}
		for _, t := range resp.GetTasks() {
			// Each lease is recorded: the checker checks that no two workers held one task at
			// once (the lease was granted between the poll's call and its answer).
			wf, task := taskRef(t.GetName())
			w.hist.write(Op{Proc: w.proc, ID: fmt.Sprintf("lease-%s-%d", w.proc, w.seq.Add(1)), Kind: "lease",
				WF: wf, Task: task, TaskID: taskID(t.GetName()), Def: workDef(wf), Key: t.GetConcurrencyKey(), Attempt: t.GetAttempt(), Lease: t.GetLeaseToken(),
				LeaseExp: t.GetLeaseExpireTime().AsTime().UnixNano(), Target: rc.target,
				Call: call, Ret: ret, Outcome: outcomeOK})
			w.leased.Add(1)
			w.inflight.Add(1)
			seed := rng.Uint64()
			go func(t *pb.Task) {
				defer w.inflight.Done()
				r := rand.New(rand.NewPCG(seed, 7))
				if queue == limitedQueue && !w.settle.Load() {
					// Held a while, so that the polls find the queue at its limit.
					time.Sleep(time.Duration(150+r.IntN(600)) * time.Millisecond)
				}
				w.handle(r, t)
			}(t)
		}
	}
}

func (w *worker) newID() string { return fmt.Sprintf("op-%s-%d", w.proc, w.seq.Add(1)) }

// taskID is the last part of "workflows/{id}/tasks/{task_id}": a map item's is
// "<revision>.<index>", which taskRef reads as no task (0).
func taskID(name string) string { return name[strings.LastIndex(name, "/")+1:] }

// workDef is the definition of the instance a task belongs to, by its id.
func workDef(wf string) string {
	switch {
	case strings.HasPrefix(wf, "limit-"):
		return defLimited
	case strings.HasPrefix(wf, "batch-") && strings.Contains(wf, ".kid."):
		return defKid
	case strings.HasPrefix(wf, "batch-"):
		return defBatch
	}
	return defOrder
}

// taskRef splits "workflows/{id}/tasks/{task_id}".
func taskRef(name string) (wf string, task int64) {
	parts := strings.Split(name, "/")
	if len(parts) == 4 {
		task, _ = strconv.ParseInt(parts[3], 10, 64)
		return parts[1], task
	}
	return name, 0
}

func (w *worker) handle(rng *rand.Rand, t *pb.Task) {
	r := rng.Float64()
	if w.settle.Load() {
		r = 0
	}
	switch {
	case r < 0.55: // promptly, perhaps twice
		time.Sleep(time.Duration(rng.IntN(80)) * time.Millisecond)
		w.complete(rng, t, false)
	case r < 0.63: // late: after the lease has run out
		expire := t.GetLeaseExpireTime().AsTime()
		time.Sleep(time.Until(expire) + time.Duration(200+rng.IntN(1200))*time.Millisecond)
		if rng.Float64() < 0.5 {
			w.heartbeat(t) // a lease that ran out is extended only if nobody took it over
		}
		w.complete(rng, t, true)
	case r < 0.73: // with heartbeats first
		for i := 0; i < 1+rng.IntN(2); i++ {
			time.Sleep(time.Duration(300+rng.IntN(400)) * time.Millisecond)
			w.heartbeat(t)
		}
		w.complete(rng, t, false)
	case r < 0.88:
		w.fail(rng, t, false)
	case r < 0.93:
		w.fail(rng, t, true)
	default:
		// Abandoned: the lease runs out and the task is retried, or gives up.
	}
}

func (w *worker) complete(rng *rand.Rand, t *pb.Task, late bool) {
	id := w.newID()
	rid := ""
	if rng.Float64() < 0.7 {
		rid = "rid-" + id
	}
	req := &pb.CompleteTaskRequest{Name: t.GetName(), LeaseToken: t.GetLeaseToken(),
		Result: resultOf(t, id), RequestId: rid}
	first := w.rt.pick()
	send := func(try int, rc *replicaConn) Op {
		return w.attempt(Op{ID: id, Try: try, Kind: "complete", RID: rid, Late: late}, t, rc,
			func(ctx context.Context, op *Op) error {
				resp, err := rc.tasks.CompleteTask(ctx, req)
				if err == nil {
					noteCompletion(op, resp)
				}
				return err
			})
	}
	if rid != "" && rng.Float64() < 0.15 && !w.settle.Load() {
		// The same completion twice at once, through both replicas: one is applied.
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); send(1, w.rt.other(first)) }()
		send(0, first)
		wg.Wait()
		return
	}
	op := send(0, first)
	for try := 1; try <= 2 && rid != "" && op.Outcome == outcomeUnknown; try++ {
		time.Sleep(time.Duration(100+rng.IntN(300)) * time.Millisecond)
		op = send(try, w.rt.pick())
	}
	if !w.settle.Load() && rng.Float64() < 0.2 {
		// A duplicate with another request id (or none): it must be fenced off.
		dup := &pb.CompleteTaskRequest{Name: t.GetName(), LeaseToken: t.GetLeaseToken(), Result: resultOf(t, w.newID())}
		dupID := dup.Result.Fields["op"].GetStringValue()
		rc := w.rt.other(first)
		w.attempt(Op{ID: dupID, Kind: "complete"}, t, rc, func(ctx context.Context, op *Op) error {
			resp, err := rc.tasks.CompleteTask(ctx, dup)
			if err == nil {
				noteCompletion(op, resp)
			}
			return err
		})
	}
}

// resultOf is a completion's result: its operation's id, and a map item's index (so
// that the join's results show each item's place).
func resultOf(t *pb.Task, id string) *structpb.Struct {
	result := map[string]any{"op": id}
	if index, ok := t.GetInput().GetFields()["index"]; ok {
		result["index"] = index.GetNumberValue()
	}
	return mustStruct(result)
}

func (w *worker) fail(rng *rand.Rand, t *pb.Task, final bool) {
	id := w.newID()
	rid := ""
	if rng.Float64() < 0.7 {
		rid = "rid-" + id
	}
	kind := "TRANSIENT"
	if final {
		kind = "REJECTED"
	}
	req := &pb.FailTaskRequest{Name: t.GetName(), LeaseToken: t.GetLeaseToken(), RequestId: rid, NonRetryable: final,
		Error: &pb.TaskError{Type: kind, Message: id}}
	op := Op{}
	for try := 0; try <= 2 && (try == 0 || (rid != "" && op.Outcome == outcomeUnknown)); try++ {
		if try > 0 {
			time.Sleep(time.Duration(100+rng.IntN(300)) * time.Millisecond)
		}
		rc := w.rt.pick()
		op = w.attempt(Op{ID: id, Try: try, Kind: "fail", RID: rid, Event: kind}, t, rc,
			func(ctx context.Context, op *Op) error {
				resp, err := rc.tasks.FailTask(ctx, req)
				if err == nil {
					noteWorkflow(op, resp.GetWorkflow())
					op.TaskStatus = strings.TrimPrefix(resp.GetTask().GetStatus().String(), "TASK_STATUS_")
				}
				return err
			})
	}
}

// noteCompletion records what a completion's answer said: the instance, and the task with
// the heartbeat its details name (see heartbeat; "" for none).
func noteCompletion(op *Op, resp *pb.CompleteTaskResponse) {
	noteWorkflow(op, resp.GetWorkflow())
	op.TaskStatus = strings.TrimPrefix(resp.GetTask().GetStatus().String(), "TASK_STATUS_")
	op.Beat = resp.GetTask().GetHeartbeatDetails().GetFields()["beat"].GetStringValue()
}

func (w *worker) heartbeat(t *pb.Task) {
	rc := w.rt.pick()
	id := w.newID()
	// Its details name it, so that a completion's answer shows which heartbeat it saw.
	details := mustStruct(map[string]any{"beat": id})
	w.attempt(Op{ID: id, Kind: "heartbeat", Beat: id}, t, rc, func(ctx context.Context, op *Op) error {
		resp, err := rc.tasks.HeartbeatTask(ctx, &pb.HeartbeatTaskRequest{Name: t.GetName(), LeaseToken: t.GetLeaseToken(), Details: details})
		if err == nil {
			op.LeaseExp = resp.GetLeaseExpireTime().AsTime().UnixNano()
			if resp.GetCancelRequested() {
				op.TaskStatus = "CANCEL_REQUESTED"
			}
		}
		return err
	})
}

func (w *worker) attempt(op Op, t *pb.Task, rc *replicaConn, send func(context.Context, *Op) error) Op {
	op.Proc = w.proc
	op.WF, op.Task = taskRef(t.GetName())
	op.TaskID = taskID(t.GetName())
	op.Def = workDef(op.WF)
	op.Attempt = t.GetAttempt()
	op.Lease = t.GetLeaseToken()
	op.Target = rc.target
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	op.Call = nowNS()
	err := send(ctx, &op)
	op.Ret = nowNS()
	cancel()
	if err != nil {
		classify(&op, err)
		w.rt.failed(rc, &op)
	} else {
		op.Outcome = outcomeOK
	}
	w.hist.write(op)
	return op
}
