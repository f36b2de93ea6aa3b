package statewright

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// BatchName returns the resource name of the batch with the given id, "batches/{batch_id}".
func BatchName(batchID string) string { return "batches/" + batchID }

func batchResourceName(name string) string {
	if strings.HasPrefix(name, "batches/") {
		return name
	}
	return BatchName(name)
}

// BatchFinished reports whether a batch has ended: COMPLETED or CANCELLED.
func BatchFinished(batch *statewrightv1.BatchOperation) bool {
	switch batch.GetState() {
	case statewrightv1.BatchState_BATCH_STATE_COMPLETED, statewrightv1.BatchState_BATCH_STATE_CANCELLED:
		return true
	}
	return false
}

// StartBatchOperation is BatchService's StartBatchOperation with a batch id made here when
// req has none (and is not a dry run): the service config retries a start that failed
// with UNAVAILABLE, and a retry with the same id and request answers the batch the first
// attempt started instead of starting a second one. req itself is not changed.
func (c *Client) StartBatchOperation(ctx context.Context, req *statewrightv1.StartBatchOperationRequest, opts ...grpc.CallOption) (*statewrightv1.StartBatchOperationResponse, error) {
	if req.GetBatchId() == "" && !req.GetDryRun() {
		req = proto.Clone(req).(*statewrightv1.StartBatchOperationRequest)
		req.BatchId = newRequestID()
	}
	return c.BatchServiceClient.StartBatchOperation(ctx, req, opts...)
}

// DefaultBatchPollInterval is how often WaitBatchOperation reads a batch unless told.
const DefaultBatchPollInterval = time.Second

// WaitBatchOperation reads the batch name (a batch id or "batches/{id}") every interval
// (zero or less: DefaultBatchPollInterval) until it has finished, and returns it as it ended
// (COMPLETED or CANCELLED). progress, when not nil, is called with the batch as first read
// and again each time its state or counts changed. A failed read is returned at once;
// when ctx ends, ctx.Err() is.
func (c *Client) WaitBatchOperation(ctx context.Context, name string, interval time.Duration, progress func(*statewrightv1.BatchOperation)) (*statewrightv1.BatchOperation, error) {
	if interval <= 0 {
		interval = DefaultBatchPollInterval
	}
	req := &statewrightv1.GetBatchOperationRequest{Name: batchResourceName(name), FailuresPageSize: 1}
	var seen *statewrightv1.BatchOperation
	for {
		resp, err := c.GetBatchOperation(ctx, req)
		if err != nil {
			return nil, err
		}
		batch := resp.GetBatch()
		if progress != nil && (seen == nil || progressed(seen, batch)) {
			progress(batch)
		}
		seen = batch
		if BatchFinished(batch) {
			return batch, nil
		}
		timer := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
}

func progressed(before, after *statewrightv1.BatchOperation) bool {
	return before.GetState() != after.GetState() || before.GetDone() != after.GetDone() ||
		before.GetFailed() != after.GetFailed() || before.GetMatched() != after.GetMatched()
}
