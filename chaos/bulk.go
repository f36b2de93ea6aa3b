package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/statewright/statewright/clients/go/statewright/v1"
)

// The run's batch operations and resets: `tally-0-K` instances of chaos-tally, started
// before the load; while it runs, a batch operation every BulkEvery that signals `bump`
// to every tally (BatchService, the payload naming the batch), a share of them cancelled
// a moment after their start, and a reset of a random tally to a random earlier revision
// every ResetEvery; every other batch is narrowed by an id prefix (bulkPrefix). After the
// faults, the run waits for every batch to end and records what GetBatchOperation says of
// each (bulk.jsonl); the checker reads it with history (check_bulk.go).

const (
	bumpEvent = "bump"
	bulkFile  = "bulk.jsonl"
)

// bulkRec is a batch as GetBatchOperation showed it once the run let it end; State
// ABSENT: the batch does not exist (its start was refused, or never arrived).
type bulkRec struct {
	ID       string        `json:"id"`
	State    string        `json:"state"`
	Matched  int64         `json:"matched"`
	Done     int64         `json:"done"`
	Failed   int64         `json:"failed"`
	Failures []bulkFailure `json:"failures,omitempty"`
}

type bulkFailure struct {
	WF     string `json:"wf"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
	Msg    string `json:"msg"`
}

// feedBulk starts the tallies, then a batch every BulkEvery until stop, and cancels some.
func (s *sideLoad) feedBulk(rng *rand.Rand) {
	for k := 0; k < s.side.Tallies; k++ {
		id := fmt.Sprintf("op-f0-%d", s.seq.Add(1))
		wf := instanceID("tally", 0, k)
		req := &pb.StartWorkflowRequest{Definition: defTally, WorkflowId: wf, RequestId: "rid-" + id,
			Input: mustStruct(map[string]any{"last": id})}
		s.send(rng, Op{ID: id, Kind: "start", WF: wf, Def: defTally, RID: req.RequestId}, startCall(req))
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for j := 0; j < s.side.Bulks && !s.stopped(s.side.BulkEvery); j++ {
		batch := fmt.Sprintf("bulk-0-%d", j)
		s.mu.Lock()
		s.bulks = append(s.bulks, batch)
		s.mu.Unlock()
		cancelAfter := time.Duration(-1)
		if rng.Float64() < s.side.BulkCancelShare {
			cancelAfter = time.Duration(100+rng.IntN(1400)) * time.Millisecond
		}
		seed := rng.Uint64()
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, 26))
			started := s.startBulk(r, batch)
			if cancelAfter < 0 || started.Outcome != outcomeOK {
				return
			}
			time.Sleep(cancelAfter)
			s.cancelBulk(r, batch)
		}()
	}
}

// bulkPrefix is the id prefix batch `batch` narrows its instances by: every other batch
// takes only the tallies whose ids start with tally-0-1 or tally-0-2 (11 of 30 each), the
// others every tally. The checker reads it from the batch's id the same way.
func bulkPrefix(batch string) string {
	var epoch, j int
	if _, err := fmt.Sscanf(batch, "bulk-%d-%d", &epoch, &j); err != nil || j%2 == 0 {
		return ""
	}
	return instanceID("tally", epoch, 1+(j/2)%2)
}

// startBulk starts batch `batch` (its id is its request id: a retry after an unknown
// outcome is answered the batch the first attempt made).
func (s *sideLoad) startBulk(rng *rand.Rand, batch string) Op {
	req := &pb.StartBatchOperationRequest{BatchId: batch, Definition: defTally, Filter: "status = RUNNING", IdPrefix: bulkPrefix(batch),
		Operation: &pb.StartBatchOperationRequest_Signal{Signal: &pb.BatchSignal{Event: bumpEvent,
			Payload: mustStruct(map[string]any{"batch": batch})}},
		Reason: "chaos " + batch, Rate: s.side.BulkRate}
	return s.send(rng, Op{ID: "op-" + batch, Kind: "batch", WF: batch, Def: defTally, RID: batch},
		func(ctx context.Context, rc *replicaConn, op *Op) error {
			resp, err := rc.batch.StartBatchOperation(ctx, req)
			if err == nil {
				op.State = resp.GetBatch().GetState().String()
			}
			return err
		})
}

func (s *sideLoad) cancelBulk(rng *rand.Rand, batch string) {
	req := &pb.CancelBatchOperationRequest{Name: "batches/" + batch, Reason: "chaos"}
	s.send(rng, Op{ID: "op-cancel-" + batch, Kind: "batch-cancel", WF: batch, Def: defTally},
		func(ctx context.Context, rc *replicaConn, op *Op) error {
			resp, err := rc.batch.CancelBatchOperation(ctx, req)
			if err == nil {
				op.State = resp.GetBatch().GetState().String()
			}
			return err
		})
}

// feedResets resets a random tally to a random revision of those it has, every
// ResetEvery until stop; the reset's reason is its operation id, which history records.
func (s *sideLoad) feedResets(rng *rand.Rand) {
	for !s.stopped(s.side.ResetEvery) {
		if s.side.Tallies == 0 {
			return
		}
		wf := instanceID("tally", 0, rng.IntN(s.side.Tallies))
		rc := s.rt.pick()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		got, err := rc.wf.GetWorkflow(ctx, &pb.GetWorkflowRequest{Name: "workflows/" + wf})
		cancel()
		if err != nil || got.GetWorkflow().GetRevision() < 2 {
			continue
		}
		to := 1 + rng.Int64N(got.GetWorkflow().GetRevision())
		id := fmt.Sprintf("op-f0-%d", s.seq.Add(1))
		req := &pb.ResetWorkflowRequest{Name: "workflows/" + wf, ToRevision: to, Reason: id, RequestId: "rid-" + id}
		s.send(rng, Op{ID: id, Kind: "reset", WF: wf, Def: defTally, RID: req.RequestId, To: to},
			func(ctx context.Context, rc *replicaConn, op *Op) error {
				resp, err := rc.wf.ResetWorkflow(ctx, req)
				if err == nil {
					noteWorkflow(op, resp.GetWorkflow())
				}
				return err
			})
	}
}

// endBulk waits (up to limit) for every batch the run started to end, then records each
// as GetBatchOperation shows it, its failures too.
func (s *sideLoad) endBulk(path string, limit time.Duration) error {
	out, err := createJSONL(path)
	if err != nil {
		return err
	}
	defer out.close()
	s.mu.Lock()
	batches := append([]string(nil), s.bulks...)
	s.mu.Unlock()
	sort.Strings(batches)
	deadline := time.Now().Add(limit)
	// A few at a time: one after the other, a long run's hundreds of batches took ten
	// minutes to read back from a loaded cluster.
	recs := make([]bulkRec, len(batches))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < bulkReaders; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				rec := s.lookAtBulk(batches[i])
				for rec.State == pb.BatchState_BATCH_STATE_RUNNING.String() && time.Now().Before(deadline) {
					time.Sleep(250 * time.Millisecond)
					rec = s.lookAtBulk(batches[i])
				}
				recs[i] = rec
			}
		}()
	}
	for i := range batches {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, rec := range recs {
		out.write(rec)
	}
	return nil
}

// bulkReaders: batches read back at once after the load.
const bulkReaders = 8

// lookAtBulk reads one batch and all its failures, through whichever replica answers.
func (s *sideLoad) lookAtBulk(batch string) bulkRec {
	rec := bulkRec{ID: batch, State: "UNREAD"}
	for try := 0; try < 20; try++ {
		rc := s.rt.pick()
		var failures []bulkFailure
		token := ""
		var got *pb.GetBatchOperationResponse
		var err error
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			got, err = rc.batch.GetBatchOperation(ctx, &pb.GetBatchOperationRequest{Name: "batches/" + batch,
				FailuresPageSize: 1000, FailuresPageToken: token})
			cancel()
			if err != nil {
				break
			}
			for _, f := range got.GetFailures() {
				failures = append(failures, bulkFailure{WF: f.GetWorkflow(), Code: f.GetCode(), Reason: f.GetReason(), Msg: f.GetMessage()})
			}
			if token = got.GetNextFailuresPageToken(); token == "" {
				break
			}
		}
		if status.Code(err) == codes.NotFound {
			return bulkRec{ID: batch, State: "ABSENT"}
		}
		if err == nil {
			b := got.GetBatch()
			return bulkRec{ID: batch, State: b.GetState().String(), Matched: b.GetMatched(), Done: b.GetDone(),
				Failed: b.GetFailed(), Failures: failures}
		}
		s.rt.failed(rc, &Op{})
		time.Sleep(300 * time.Millisecond)
	}
	return rec
}
