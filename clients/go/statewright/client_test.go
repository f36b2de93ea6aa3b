package statewright_test

import (
	"context"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/statewright/statewright/clients/go/statewright"
	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// flakyServer fails GetWorkflow with UNAVAILABLE until failures run out, fails
// ResumeWorkflow with FAILED_PRECONDITION, and records the deadlines it sees.
type flakyServer struct {
	statewrightv1.UnimplementedWorkflowServiceServer
	failures      atomic.Int32
	getCalls      atomic.Int32
	resumeCalls   atomic.Int32
	startDeadline atomic.Int64 // remaining nanoseconds seen by StartWorkflow
	getDeadline   atomic.Int64
}

func remaining(ctx context.Context) int64 {
	d, ok := ctx.Deadline()
	if !ok {
		return -1
	}
	return int64(time.Until(d))
}

func (s *flakyServer) GetWorkflow(ctx context.Context, req *statewrightv1.GetWorkflowRequest) (*statewrightv1.GetWorkflowResponse, error) {
	s.getCalls.Add(1)
	s.getDeadline.Store(remaining(ctx))
	if s.failures.Add(-1) >= 0 {
		return nil, status.Error(codes.Unavailable, "storage down")
	}
	return &statewrightv1.GetWorkflowResponse{Workflow: &statewrightv1.Workflow{Name: req.GetName(), Revision: 7}}, nil
}

func (s *flakyServer) ResumeWorkflow(context.Context, *statewrightv1.ResumeWorkflowRequest) (*statewrightv1.ResumeWorkflowResponse, error) {
	s.resumeCalls.Add(1)
	return nil, status.Error(codes.FailedPrecondition, "not waiting")
}

func (s *flakyServer) StartWorkflow(ctx context.Context, _ *statewrightv1.StartWorkflowRequest) (*statewrightv1.StartWorkflowResponse, error) {
	s.startDeadline.Store(remaining(ctx))
	return &statewrightv1.StartWorkflowResponse{Workflow: &statewrightv1.Workflow{Revision: 1}}, nil
}

func newTestClient(t *testing.T, srv statewrightv1.WorkflowServiceServer) *statewright.Client {
	t.Helper()
	return newBufconnClient(t, func(gs *grpc.Server) { statewrightv1.RegisterWorkflowServiceServer(gs, srv) })
}

// newBufconnClient serves what register adds on an in-memory listener and returns a client
// of it; both end with the test.
func newBufconnClient(t *testing.T, register func(*grpc.Server)) *statewright.Client {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	register(gs)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	client, err := statewright.NewClient("passthrough:///bufnet",
		statewright.WithDialOptions(grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) })))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func TestRetriesUnavailableWithServiceConfig(t *testing.T) {
	srv := &flakyServer{}
	srv.failures.Store(2)
	client := newTestClient(t, srv)
	resp, err := client.GetWorkflow(context.Background(), &statewrightv1.GetWorkflowRequest{Name: "workflows/a"})
	if err != nil {
		t.Fatalf("GetWorkflow after two UNAVAILABLE answers: %v", err)
	}
	if resp.GetWorkflow().GetRevision() != 7 {
		t.Errorf("revision = %d", resp.GetWorkflow().GetRevision())
	}
	if got := srv.getCalls.Load(); got != 3 {
		t.Errorf("server saw %d attempts, want 3", got)
	}
}

func TestRetriesStopAtMaxAttempts(t *testing.T) {
	srv := &flakyServer{}
	srv.failures.Store(100)
	client := newTestClient(t, srv)
	_, err := client.GetWorkflow(context.Background(), &statewrightv1.GetWorkflowRequest{Name: "workflows/a"})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("code = %v, want UNAVAILABLE", status.Code(err))
	}
	if got := srv.getCalls.Load(); got != 5 {
		t.Errorf("server saw %d attempts, want maxAttempts 5", got)
	}
}

func TestDoesNotRetryOtherCodes(t *testing.T) {
	srv := &flakyServer{}
	client := newTestClient(t, srv)
	_, err := client.ResumeWorkflow(context.Background(), &statewrightv1.ResumeWorkflowRequest{Name: "workflows/a"})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("code = %v, want FAILED_PRECONDITION", status.Code(err))
	}
	if got := srv.resumeCalls.Load(); got != 1 {
		t.Errorf("server saw %d attempts, want 1", got)
	}
}

func TestPerMethodTimeouts(t *testing.T) {
	srv := &flakyServer{}
	client := newTestClient(t, srv)
	ctx := context.Background()
	if _, err := client.GetWorkflow(ctx, &statewrightv1.GetWorkflowRequest{Name: "workflows/a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.StartWorkflow(ctx, &statewrightv1.StartWorkflowRequest{Definition: "d"}); err != nil {
		t.Fatal(err)
	}
	within := func(name string, got int64, want time.Duration) {
		if d := time.Duration(got); d <= want-2*time.Second || d > want {
			t.Errorf("%s deadline %v from now, want about %v", name, d, want)
		}
	}
	within("GetWorkflow", srv.getDeadline.Load(), 10*time.Second)
	within("StartWorkflow", srv.startDeadline.Load(), 30*time.Second)

	// A shorter deadline of the caller's wins over the service config's timeout.
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := client.StartWorkflow(short, &statewrightv1.StartWorkflowRequest{Definition: "d"}); err != nil {
		t.Fatal(err)
	}
	if d := time.Duration(srv.startDeadline.Load()); d > time.Second {
		t.Errorf("StartWorkflow deadline %v from now, want at most the caller's 1s", d)
	}
}

func TestServiceConfigIsTheSharedOne(t *testing.T) {
	shared, err := os.ReadFile("../../service-config.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(shared) != statewrightv1.DefaultServiceConfig {
		t.Error("statewrightv1.DefaultServiceConfig differs from clients/service-config.json: run clients/go/generate.sh")
	}
}
