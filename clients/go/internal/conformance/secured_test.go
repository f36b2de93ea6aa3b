package conformance

import (
	"bytes"
	"context"
	"crypto/tls"
	"maps"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/statewright/statewright/clients/go/internal/testpki"
	"github.com/statewright/statewright/clients/go/statewright"
	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// gate admits a call only with the expected bearer token over an mTLS connection whose
// client certificate names the expected client, as a secured statewrightd does, and
// counts the calls it admitted by method.
type gate struct {
	token, client string

	mu       sync.Mutex
	admitted map[string]int
	refused  []string
}

func (g *gate) check(ctx context.Context, method string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	var names []string
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(info.State.VerifiedChains) > 0 {
			names = info.State.VerifiedChains[0][0].DNSNames
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !slices.Equal(md.Get("authorization"), []string{"Bearer " + g.token}) || !slices.Equal(names, []string{g.client}) {
		g.refused = append(g.refused, method)
		return statusError(codes.Unauthenticated, "UNAUTHENTICATED", nil)
	}
	g.admitted[method]++
	return nil
}

func TestSharedScenarioOverMutualTLSWithAToken(t *testing.T) {
	ca := testpki.NewCA(t, "ca")
	g := &gate{token: "sw_conformance", client: "runner", admitted: map[string]int{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(&tls.Config{
			Certificates: []tls.Certificate{ca.Server("server").TLSCertificate()},
			ClientCAs:    ca.Pool(),
			ClientAuth:   tls.RequireAndVerifyClientCert,
			MinVersion:   tls.VersionTLS12,
		})),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			if err := g.check(ctx, info.FullMethod); err != nil {
				return nil, err
			}
			return handler(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			if err := g.check(ss.Context(), info.FullMethod); err != nil {
				return err
			}
			return handler(srv, ss)
		}),
	)
	fake := newFakeServer()
	statewrightv1.RegisterWorkflowServiceServer(gs, fake)
	statewrightv1.RegisterTaskServiceServer(gs, &fakeTaskServer{s: fake})
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)

	pair := ca.Client("runner")
	client, err := statewright.NewClient(lis.Addr().String(), statewright.WithCAFile(ca.CertFile()),
		statewright.WithClientCertFiles(pair.CertFile, pair.KeyFile), statewright.WithToken(g.token))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	var out bytes.Buffer
	r := &Runner{Client: client, Tasks: client, Out: &out, RunID: "abc123", WatchTimeout: 5 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sc := loadShared(t)
	res, err := r.Run(ctx, sc)
	if err != nil || res.Passed != len(sc.Steps) {
		t.Fatalf("result %+v, %v\n%s", res, err, out.String())
	}

	g.mu.Lock()
	refused, admitted := slices.Clone(g.refused), maps.Clone(g.admitted)
	g.mu.Unlock()
	if len(refused) > 0 {
		t.Errorf("calls refused: %v", refused)
	}
	// Every kind of call went through the gate: both services, unary and streaming.
	for _, method := range []string{
		statewrightv1.WorkflowService_StartWorkflow_FullMethodName,
		statewrightv1.WorkflowService_WatchWorkflow_FullMethodName,
		statewrightv1.TaskService_PollTasks_FullMethodName,
		statewrightv1.TaskService_CompleteTask_FullMethodName,
	} {
		if admitted[method] == 0 {
			t.Errorf("no %s call admitted; admitted %v", method, admitted)
		}
	}

	// The same server refuses a client without the token, or without the certificate.
	for name, tc := range map[string]struct {
		opts []statewright.Option
		code codes.Code
	}{
		"no token": {[]statewright.Option{statewright.WithCAFile(ca.CertFile()),
			statewright.WithClientCertFiles(pair.CertFile, pair.KeyFile)}, codes.Unauthenticated},
		"no certificate": {[]statewright.Option{statewright.WithCAFile(ca.CertFile()), statewright.WithToken(g.token),
			statewright.WithDialOptions(grpc.WithDisableRetry())}, codes.Unavailable},
	} {
		other, err := statewright.NewClient(lis.Addr().String(), tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = other.GetDiagnostics(ctx, &statewrightv1.GetDiagnosticsRequest{})
		_ = other.Close()
		if status.Code(err) != tc.code {
			t.Errorf("%s: %v, want %v", name, err, tc.code)
		}
	}
}
