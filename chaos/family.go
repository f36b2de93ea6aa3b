package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	pb "github.com/statewright/statewright/clients/go/statewright/v1"
)

// The run's batches: `batch-0-K` instances of chaos-batch (a fan-out over its `items`,
// then a child workflow), started one every BatchEvery while the load runs, a share of
// them cancelled a moment later (in the fan-out or while the child runs: the cancel
// cascades to the child). The workers work the items and the children's tasks (queue
// chaos-map, worker.go); the checker reads them (check_family.go).

// feedBatches starts the batches until stop, and cancels some.
func (s *sideLoad) feedBatches(rng *rand.Rand) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for k := 0; k < s.side.Batches && !s.stopped(s.side.BatchEvery); k++ {
		items := make([]any, 1+rng.IntN(max(1, s.side.MaxItems)))
		for i := range items {
			items[i] = fmt.Sprintf("item-%d-%d", k, i)
		}
		id := fmt.Sprintf("op-f0-%d", s.seq.Add(1))
		wf := instanceID("batch", 0, k)
		req := &pb.StartWorkflowRequest{Definition: defBatch, WorkflowId: wf, RequestId: "rid-" + id,
			Input: mustStruct(map[string]any{"last": id, "items": items})}
		cancelAfter := time.Duration(-1)
		if rng.Float64() < s.side.CancelShare {
			cancelAfter = time.Duration(200+rng.IntN(2800)) * time.Millisecond
		}
		seed := rng.Uint64()
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, 24))
			started := s.send(r, Op{ID: id, Kind: "start", WF: wf, Def: defBatch, RID: req.RequestId}, startCall(req))
			if cancelAfter < 0 || started.Outcome != outcomeOK {
				return
			}
			time.Sleep(cancelAfter)
			s.cancelBatch(r, wf)
		}()
	}
}

// cancelBatch cancels a batch, its reason the operation's id (as the clients' cancels).
func (s *sideLoad) cancelBatch(rng *rand.Rand, wf string) {
	id := fmt.Sprintf("op-f0-%d", s.seq.Add(1))
	req := &pb.CancelWorkflowRequest{Name: "workflows/" + wf, Reason: id, RequestId: "rid-" + id}
	s.send(rng, Op{ID: id, Kind: "cancel", WF: wf, Def: defBatch, RID: req.RequestId},
		func(ctx context.Context, rc *replicaConn, op *Op) error {
			resp, err := rc.wf.CancelWorkflow(ctx, req)
			if err == nil {
				noteWorkflow(op, resp.GetWorkflow())
			}
			return err
		})
}
