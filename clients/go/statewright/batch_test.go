package statewright_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/statewright/statewright/clients/go/statewright"
	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// batchServer answers StartBatchOperation with the batch the request names, and
// GetBatchOperation with the batches of progress in turn (the last one from then on).
type batchServer struct {
	statewrightv1.UnimplementedBatchServiceServer
	mu       sync.Mutex
	starts   []*statewrightv1.StartBatchOperationRequest
	progress []*statewrightv1.BatchOperation
	gets     int
}

func (s *batchServer) StartBatchOperation(_ context.Context, req *statewrightv1.StartBatchOperationRequest) (*statewrightv1.StartBatchOperationResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.starts = append(s.starts, req)
	batch := &statewrightv1.BatchOperation{Reason: req.GetReason(), Matched: 2}
	if !req.GetDryRun() {
		batch.Name = statewright.BatchName(req.GetBatchId())
		batch.State = statewrightv1.BatchState_BATCH_STATE_RUNNING
	}
	return &statewrightv1.StartBatchOperationResponse{Batch: batch, Sample: []string{"workflows/a", "workflows/b"}}, nil
}

func (s *batchServer) GetBatchOperation(_ context.Context, req *statewrightv1.GetBatchOperationRequest) (*statewrightv1.GetBatchOperationResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.GetName() != "batches/b1" {
		return nil, status.Error(codes.NotFound, "no such batch")
	}
	batch := s.progress[min(s.gets, len(s.progress)-1)]
	s.gets++
	return &statewrightv1.GetBatchOperationResponse{Batch: batch}, nil
}

func (s *batchServer) CancelBatchOperation(context.Context, *statewrightv1.CancelBatchOperationRequest) (*statewrightv1.CancelBatchOperationResponse, error) {
	return nil, status.Error(codes.FailedPrecondition, "batch b1 has completed")
}

func newBatchClient(t *testing.T, srv *batchServer) *statewright.Client {
	t.Helper()
	return newBufconnClient(t, func(gs *grpc.Server) { statewrightv1.RegisterBatchServiceServer(gs, srv) })
}

func TestStartBatchOperationMakesABatchIDOnlyWhenNoneIsGiven(t *testing.T) {
	srv := &batchServer{}
	client := newBatchClient(t, srv)
	ctx := context.Background()
	req := &statewrightv1.StartBatchOperationRequest{
		Filter:    "status = FAILED",
		IdPrefix:  "order-",
		Operation: &statewrightv1.StartBatchOperationRequest_Retry{Retry: &statewrightv1.BatchRetry{}},
		Reason:    "bank is back",
	}
	made, err := client.StartBatchOperation(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if req.GetBatchId() != "" {
		t.Errorf("the caller's request was changed: batch id %q", req.GetBatchId())
	}
	given, err := client.StartBatchOperation(ctx, &statewrightv1.StartBatchOperationRequest{BatchId: "b-7", Reason: "x"})
	if err != nil {
		t.Fatal(err)
	}
	dry, err := client.StartBatchOperation(ctx, &statewrightv1.StartBatchOperationRequest{DryRun: true, Reason: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if len(srv.starts) != 3 {
		t.Fatalf("%d starts reached the server, want 3", len(srv.starts))
	}
	first := srv.starts[0]
	if len(first.GetBatchId()) != 32 || made.GetBatch().GetName() != "batches/"+first.GetBatchId() {
		t.Errorf("made batch id %q, answered %q", first.GetBatchId(), made.GetBatch().GetName())
	}
	if first.GetRetry() == nil || first.GetFilter() != "status = FAILED" || first.GetIdPrefix() != "order-" || first.GetReason() != "bank is back" {
		t.Errorf("the start lost its fields: %v", first)
	}
	if given.GetBatch().GetName() != "batches/b-7" {
		t.Errorf("a given id became %q", given.GetBatch().GetName())
	}
	if srv.starts[2].GetBatchId() != "" || dry.GetBatch().GetName() != "" || dry.GetBatch().GetMatched() != 2 {
		t.Errorf("a dry run got batch id %q, answer %v", srv.starts[2].GetBatchId(), dry.GetBatch())
	}
}

func TestWaitBatchOperationReportsEachChangeUntilTheBatchEnds(t *testing.T) {
	running := statewrightv1.BatchState_BATCH_STATE_RUNNING
	srv := &batchServer{progress: []*statewrightv1.BatchOperation{
		{Name: "batches/b1", State: running, Matched: 4, Done: 1},
		{Name: "batches/b1", State: running, Matched: 4, Done: 1},
		{Name: "batches/b1", State: running, Matched: 4, Done: 3},
		{Name: "batches/b1", State: statewrightv1.BatchState_BATCH_STATE_COMPLETED, Matched: 4, Done: 3, Failed: 1},
	}}
	client := newBatchClient(t, srv)
	var seen []int64
	ended, err := client.WaitBatchOperation(context.Background(), "b1", time.Millisecond, func(b *statewrightv1.BatchOperation) {
		seen = append(seen, b.GetDone()*10+b.GetFailed())
	})
	if err != nil {
		t.Fatal(err)
	}
	if !statewright.BatchFinished(ended) || ended.GetFailed() != 1 {
		t.Errorf("ended as %v", ended)
	}
	if want := []int64{10, 30, 31}; len(seen) != len(want) || seen[0] != want[0] || seen[1] != want[1] || seen[2] != want[2] {
		t.Errorf("progress %v, want %v", seen, want)
	}
	if srv.gets != 4 {
		t.Errorf("%d reads, want 4", srv.gets)
	}
}

func TestWaitBatchOperationStopsWithItsContextAndReturnsTypedErrors(t *testing.T) {
	srv := &batchServer{progress: []*statewrightv1.BatchOperation{
		{Name: "batches/b1", State: statewrightv1.BatchState_BATCH_STATE_RUNNING},
	}}
	client := newBatchClient(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	_, err := client.WaitBatchOperation(ctx, "batches/b1", time.Millisecond, func(*statewrightv1.BatchOperation) {
		calls++
		cancel()
	})
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("err %v after %d progress calls, want context.Canceled after 1", err, calls)
	}
	if _, err := client.WaitBatchOperation(context.Background(), "other", 0, nil); status.Code(err) != codes.NotFound {
		t.Errorf("a missing batch: %v", err)
	}
	_, err = client.CancelBatchOperation(context.Background(), &statewrightv1.CancelBatchOperationRequest{Name: "batches/b1", Reason: "x"})
	var typed *statewright.Error
	if !errors.As(err, &typed) || typed.Code != codes.FailedPrecondition {
		t.Errorf("cancel error %v is not a typed FAILED_PRECONDITION", err)
	}
}
