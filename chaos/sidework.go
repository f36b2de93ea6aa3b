package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/statewright/statewright/clients/go/statewright/v1"
)

// The run's own side of two workloads that need set-up through the API before the load
// and a look at the end: the flow-controlled queue (its config, and the orders that fill
// it: `limit-K` instances of chaos-limited, each keyed by a customer) and the schedule
// (created before the load, watched while it runs, paused when it ends). The workers
// work the limited queue (worker.go); the checker reads both (check_sidework.go).

const (
	limitedQueue = "chaos-limited"
	scheduleID   = "chaos-fire"
)

// sideConfig is what the run set up, as the checker reads it from run.json.
type sideConfig struct {
	// The limited queue's limits (SetQueueConfig), its customers (concurrency keys) and
	// how many orders the feeder starts at most, Batch at once every FeedEvery (a burst
	// of ready tasks, more than the limit lets go).
	MaxLeased    int32         `json:"max_leased"`
	KeyMaxLeased int32         `json:"key_max_leased"`
	Customers    int           `json:"customers"`
	Orders       int           `json:"orders"`
	Batch        int           `json:"batch"`
	FeedEvery    time.Duration `json:"feed_every"`
	// The schedule: every Interval, ALLOW_ALL, no jitter.
	Interval time.Duration `json:"schedule_interval"`
	// The batches (family.go): at most Batches, one every BatchEvery, each of 1 to
	// MaxItems items, a share CancelShare of them cancelled a moment after their start.
	Batches     int           `json:"batches"`
	BatchEvery  time.Duration `json:"batch_every"`
	MaxItems    int           `json:"max_items"`
	CancelShare float64       `json:"cancel_share"`
	// The batch operations (bulk.go): Tallies instances, at most Bulks batches of bump
	// signals, one every BulkEvery at BulkRate instances a second, a share BulkCancelShare
	// of them cancelled a moment after their start; a reset of a tally every ResetEvery.
	Tallies         int           `json:"tallies"`
	Bulks           int           `json:"bulks"`
	BulkEvery       time.Duration `json:"bulk_every"`
	BulkRate        float64       `json:"bulk_rate"`
	BulkCancelShare float64       `json:"bulk_cancel_share"`
	ResetEvery      time.Duration `json:"reset_every"`
}

var defaultSide = sideConfig{MaxLeased: 3, KeyMaxLeased: 1, Customers: 5, Orders: 600, Batch: 5,
	FeedEvery: 1500 * time.Millisecond, Interval: 2 * time.Second,
	Batches: 400, BatchEvery: time.Second, MaxItems: 6, CancelShare: 0.3,
	Tallies: 30, Bulks: 300, BulkEvery: 3 * time.Second, BulkRate: 40, BulkCancelShare: 0.25,
	ResetEvery: 700 * time.Millisecond}

// sideTimes: when the run created and paused its schedule (Unix ns; 0: it could not).
type sideTimes struct {
	ScheduleCreated int64 `json:"schedule_created"`
	SchedulePaused  int64 `json:"schedule_paused"`
	QueueConfigured int64 `json:"queue_configured"`
}

// retryCall runs f against each replica in turn until one answers, for up to limit: a
// set-up call must get through whatever fault is on.
func retryCall(conns []*replicaConn, limit time.Duration, f func(context.Context, *replicaConn) error) error {
	deadline := time.Now().Add(limit)
	var err error
	for i := 0; time.Now().Before(deadline); i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = f(ctx, conns[i%len(conns)])
		cancel()
		if err == nil || status.Code(err) == codes.AlreadyExists {
			return nil
		}
		if status.Code(err) == codes.Unimplemented {
			return err
		}
		time.Sleep(300 * time.Millisecond)
	}
	return err
}

// setUpSide configures the limited queue and creates the schedule, before any load. A
// store without flow control (Citus, for now, answers UNIMPLEMENTED) leaves the queue
// unlimited: its limits are then zero in the run's config, and the checker checks none.
func setUpSide(conns []*replicaConn, side *sideConfig, times *sideTimes) error {
	err := retryCall(conns, 30*time.Second, func(ctx context.Context, rc *replicaConn) error {
		_, err := rc.tasks.SetQueueConfig(ctx, &pb.SetQueueConfigRequest{Config: &pb.QueueConfig{
			Queue: limitedQueue, MaxLeased: side.MaxLeased, KeyMaxLeased: side.KeyMaxLeased}})
		return err
	})
	switch {
	case status.Code(err) == codes.Unimplemented:
		fmt.Printf("chaos: no flow control on this store (%v): the limited queue runs unlimited, unchecked\n", status.Convert(err).Message())
		side.MaxLeased, side.KeyMaxLeased = 0, 0
	case err != nil:
		return fmt.Errorf("SetQueueConfig: %w", err)
	default:
		times.QueueConfigured = nowNS()
	}
	err = retryCall(conns, 30*time.Second, func(ctx context.Context, rc *replicaConn) error {
		_, err := rc.sched.CreateSchedule(ctx, &pb.CreateScheduleRequest{ScheduleId: scheduleID, Schedule: &pb.Schedule{
			Spec: &pb.ScheduleSpec{Interval: durationpb.New(side.Interval)},
			Action: &pb.ScheduleAction{Definition: defFire,
				InputExpressions: map[string]string{"nominal": "string(schedule.nominal_time)"}},
			Policies: &pb.SchedulePolicies{Overlap: pb.OverlapPolicy_OVERLAP_POLICY_ALLOW_ALL},
		}})
		return err
	})
	if err != nil {
		return fmt.Errorf("CreateSchedule: %w", err)
	}
	times.ScheduleCreated = nowNS()
	return nil
}

// pauseSchedule stops the schedule's fires when the load ends, so that the run settles.
func pauseSchedule(conns []*replicaConn, times *sideTimes) error {
	err := retryCall(conns, 60*time.Second, func(ctx context.Context, rc *replicaConn) error {
		_, err := rc.sched.PauseSchedule(ctx, &pb.PauseScheduleRequest{Name: "schedules/" + scheduleID, Note: "the chaos run's load is over"})
		return err
	})
	if err == nil {
		times.SchedulePaused = nowNS()
	}
	return err
}

// sideLoad is the feeder of the limited queue and the watcher of the schedule's record,
// both running until stop.
type sideLoad struct {
	rt      *router
	hist    *jsonl // the feeder's starts (history/f0.jsonl)
	actions *jsonl // what GetSchedule showed of the schedule's recent fires (schedule.jsonl)
	side    sideConfig
	seq     atomic.Int64
	stop    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	bulks   []string // the batch operations started (bulk.go)
}

// ScheduleAction is one fire the schedule recorded, as GetSchedule showed it.
type ScheduleAction struct {
	Nominal  int64  `json:"nominal"` // Unix ns
	Actual   int64  `json:"actual"`
	WF       string `json:"wf"`
	Outcome  string `json:"outcome"`
	Reason   string `json:"reason,omitempty"`
	Observed int64  `json:"observed"`
}

func startSideLoad(conns []*replicaConn, out string, side sideConfig, seed uint64) (*sideLoad, error) {
	hist, err := createJSONL(out + "/history/f0.jsonl")
	if err != nil {
		return nil, err
	}
	actions, err := createJSONL(out + "/schedule.jsonl")
	if err != nil {
		return nil, err
	}
	s := &sideLoad{rt: newRouter(conns, seed), hist: hist, actions: actions, side: side, stop: make(chan struct{})}
	s.wg.Add(5)
	go func() { defer s.wg.Done(); s.feed(rand.New(rand.NewPCG(seed, 21))) }()
	go func() { defer s.wg.Done(); s.feedBatches(rand.New(rand.NewPCG(seed, 23))) }()
	go func() { defer s.wg.Done(); s.feedBulk(rand.New(rand.NewPCG(seed, 25))) }()
	go func() { defer s.wg.Done(); s.feedResets(rand.New(rand.NewPCG(seed, 27))) }()
	go func() { defer s.wg.Done(); s.watchSchedule() }()
	return s, nil
}

// finish stops the feeder, looks at the schedule's record once more (after its pause)
// and closes the files.
func (s *sideLoad) finish() {
	close(s.stop)
	s.wg.Wait()
	s.lookAtSchedule(map[string]bool{})
	s.hist.close()
	s.actions.close()
}

func (s *sideLoad) stopped(d time.Duration) bool {
	select {
	case <-s.stop:
		return true
	case <-time.After(d):
		return false
	}
}

// feed starts the limited queue's orders, a batch at once, each with a request id
// (retried after an unknown outcome), through either replica.
func (s *sideLoad) feed(rng *rand.Rand) {
	for k := 0; k < s.side.Orders && !s.stopped(s.side.FeedEvery); {
		var wg sync.WaitGroup
		for i := 0; i < s.side.Batch && k < s.side.Orders; i, k = i+1, k+1 {
			customer, seed := rng.IntN(s.side.Customers), rng.Uint64()
			wg.Add(1)
			go func(k int) {
				defer wg.Done()
				s.startOrder(rand.New(rand.NewPCG(seed, 22)), k, customer)
			}(k)
		}
		wg.Wait()
	}
}

func (s *sideLoad) startOrder(rng *rand.Rand, k, customer int) {
	id := fmt.Sprintf("op-f0-%d", s.seq.Add(1))
	wf := instanceID("limit", 0, k)
	req := &pb.StartWorkflowRequest{Definition: defLimited, WorkflowId: wf, RequestId: "rid-" + id,
		Input: mustStruct(map[string]any{"last": id, "customer": fmt.Sprintf("cust-%d", customer),
			"rounds": float64(1 + rng.IntN(3))})}
	s.send(rng, Op{ID: id, Kind: "start", WF: wf, Def: defLimited, RID: req.RequestId}, startCall(req))
}

// startCall sends a start and notes what its answer says.
func startCall(req *pb.StartWorkflowRequest) func(context.Context, *replicaConn, *Op) error {
	return func(ctx context.Context, rc *replicaConn, op *Op) error {
		resp, err := rc.wf.StartWorkflow(ctx, req)
		if err == nil {
			noteWorkflow(op, resp.GetWorkflow())
			op.Created = resp.GetCreated()
		}
		return err
	}
}

// send makes one operation of the run's own (recorded as f0's), through either replica,
// tried again (up to three times) after an unknown outcome when it has a request id.
func (s *sideLoad) send(rng *rand.Rand, op Op, call func(context.Context, *replicaConn, *Op) error) Op {
	for try := 0; ; try++ {
		rc := s.rt.pick()
		op.Proc, op.Try, op.Target = "f0", try, rc.target
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		op.Call = nowNS()
		err := call(ctx, rc, &op)
		op.Ret = nowNS()
		cancel()
		if err != nil {
			classify(&op, err)
			s.rt.failed(rc, &op)
		} else {
			op.Outcome = outcomeOK
		}
		s.hist.write(op)
		if op.Outcome != outcomeUnknown || op.RID == "" || try == 2 {
			return op
		}
		time.Sleep(time.Duration(100+rng.IntN(300)) * time.Millisecond)
	}
}

// watchSchedule reads the schedule every second and records each fire it shows (the
// record keeps the last ten: twenty seconds of fires, past any fault's outage).
func (s *sideLoad) watchSchedule() {
	seen := map[string]bool{}
	for !s.stopped(time.Second) {
		s.lookAtSchedule(seen)
	}
}

func (s *sideLoad) lookAtSchedule(seen map[string]bool) {
	rc := s.rt.pick()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	resp, err := rc.sched.GetSchedule(ctx, &pb.GetScheduleRequest{Name: "schedules/" + scheduleID})
	cancel()
	if err != nil {
		op := Op{}
		classify(&op, err)
		s.rt.failed(rc, &op)
		return
	}
	now := nowNS()
	for _, a := range resp.GetSchedule().GetInfo().GetRecentActions() {
		rec := ScheduleAction{Nominal: a.GetNominalTime().AsTime().UnixNano(), Actual: a.GetActualTime().AsTime().UnixNano(),
			WF: a.GetWorkflow(), Outcome: a.GetOutcome().String(), Reason: a.GetReason(), Observed: now}
		key := fmt.Sprint(rec.Nominal, rec.Outcome, rec.WF)
		if !seen[key] {
			seen[key] = true
			s.actions.write(rec)
		}
	}
}
