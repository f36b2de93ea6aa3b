package statewright_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/statewright/statewright/clients/go/internal/testpki"
	"github.com/statewright/statewright/clients/go/statewright"
	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// seenCall is what the secured fake saw of one call.
type seenCall struct {
	method        string
	authorization []string
	clientNames   []string // the verified client certificate's DNS SANs, under mTLS
}

// securedServer is a WorkflowService and TaskService on a loopback port, plaintext or TLS,
// that records each call's authorization metadata and client certificate, and refuses a
// call with UNAUTHENTICATED when refuse says so.
type securedServer struct {
	addr string

	mu     sync.Mutex
	calls  []seenCall
	refuse func(authorization []string) bool
}

type securedWorkflows struct {
	statewrightv1.UnimplementedWorkflowServiceServer
}

func (securedWorkflows) GetWorkflow(_ context.Context, req *statewrightv1.GetWorkflowRequest) (*statewrightv1.GetWorkflowResponse, error) {
	return &statewrightv1.GetWorkflowResponse{Workflow: &statewrightv1.Workflow{Name: req.GetName(), Revision: 1}}, nil
}

func (securedWorkflows) WatchWorkflow(req *statewrightv1.WatchWorkflowRequest, stream statewrightv1.WorkflowService_WatchWorkflowServer) error {
	return stream.Send(&statewrightv1.WatchWorkflowResponse{
		Type:     statewrightv1.WatchEventType_WATCH_EVENT_TYPE_CURRENT,
		Revision: 2,
		Workflow: &statewrightv1.Workflow{Name: req.GetName(), Revision: 2, Status: completed},
	})
}

type securedTasks struct {
	statewrightv1.UnimplementedTaskServiceServer
}

func (securedTasks) PollTasks(context.Context, *statewrightv1.PollTasksRequest) (*statewrightv1.PollTasksResponse, error) {
	return &statewrightv1.PollTasksResponse{}, nil
}

// startSecured serves on 127.0.0.1 with serverTLS (nil: plaintext) until the test ends.
func startSecured(t *testing.T, serverTLS *tls.Config) *securedServer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &securedServer{addr: lis.Addr().String()}
	opts := []grpc.ServerOption{
		grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			if err := s.admit(ctx, info.FullMethod); err != nil {
				return nil, err
			}
			return handler(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			if err := s.admit(ss.Context(), info.FullMethod); err != nil {
				return err
			}
			return handler(srv, ss)
		}),
	}
	if serverTLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(serverTLS)))
	}
	gs := grpc.NewServer(opts...)
	statewrightv1.RegisterWorkflowServiceServer(gs, securedWorkflows{})
	statewrightv1.RegisterTaskServiceServer(gs, securedTasks{})
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return s
}

func (s *securedServer) admit(ctx context.Context, method string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	call := seenCall{method: method[strings.LastIndex(method, "/")+1:], authorization: md.Get("authorization")}
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(info.State.VerifiedChains) > 0 {
			call.clientNames = info.State.VerifiedChains[0][0].DNSNames
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call)
	if s.refuse != nil && s.refuse(call.authorization) {
		return reasonError(codes.Unauthenticated, "UNAUTHENTICATED")
	}
	return nil
}

func (s *securedServer) seen() []seenCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

func tlsServerConfig(t *testing.T, ca *testpki.CA, clientAuth tls.ClientAuthType) *tls.Config {
	t.Helper()
	return &tls.Config{
		Certificates: []tls.Certificate{ca.Server("server").TLSCertificate()},
		ClientCAs:    ca.Pool(),
		ClientAuth:   clientAuth,
		MinVersion:   tls.VersionTLS12,
	}
}

// noRetry makes a call that fails at the handshake fail at once: the service config
// retries UNAVAILABLE, which is what a refused handshake is.
var noRetry = statewright.WithDialOptions(grpc.WithDisableRetry())

func dial(t *testing.T, target string, opts ...statewright.Option) *statewright.Client {
	t.Helper()
	client, err := statewright.NewClient(target, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func getWorkflow(ctx context.Context, client *statewright.Client) error {
	_, err := client.GetWorkflow(ctx, &statewrightv1.GetWorkflowRequest{Name: "workflows/wf-1"})
	return err
}

// everyKind makes a unary WorkflowService call, a WatchWorkflow stream and a TaskService call.
func everyKind(t *testing.T, ctx context.Context, client *statewright.Client) {
	t.Helper()
	if err := getWorkflow(ctx, client); err != nil {
		t.Fatalf("GetWorkflow: %v", err)
	}
	if err := client.Watch(ctx, "wf-1", statewright.WatchOptions{}, func(*statewrightv1.WatchWorkflowResponse) error { return nil }); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if _, err := client.PollTasks(ctx, &statewrightv1.PollTasksRequest{Queue: "payments"}); err != nil {
		t.Fatalf("PollTasks: %v", err)
	}
}

func TestTokenGoesWithEveryCallOverTLS(t *testing.T) {
	ca := testpki.NewCA(t, "ca")
	srv := startSecured(t, tlsServerConfig(t, ca, tls.NoClientCert))
	client := dial(t, srv.addr, statewright.WithCAFile(ca.CertFile()), statewright.WithToken("sw_one"))
	everyKind(t, testContext(t), client)

	calls := srv.seen()
	var methods []string
	for _, c := range calls {
		methods = append(methods, c.method)
		if !slices.Equal(c.authorization, []string{"Bearer sw_one"}) {
			t.Errorf("%s carried authorization %q, want one Bearer sw_one", c.method, c.authorization)
		}
	}
	if !slices.Equal(methods, []string{"GetWorkflow", "WatchWorkflow", "PollTasks"}) {
		t.Errorf("the server saw %v", methods)
	}
}

func TestMutualTLS(t *testing.T) {
	ca := testpki.NewCA(t, "ca")
	srv := startSecured(t, tlsServerConfig(t, ca, tls.RequireAndVerifyClientCert))
	ctx := testContext(t)

	t.Run("certificate files", func(t *testing.T) {
		pair := ca.Client("worker-1")
		client := dial(t, srv.addr, statewright.WithCAFile(ca.CertFile()), statewright.WithClientCertFiles(pair.CertFile, pair.KeyFile))
		if err := getWorkflow(ctx, client); err != nil {
			t.Fatal(err)
		}
		if got := srv.seen(); !slices.Equal(got[len(got)-1].clientNames, []string{"worker-1"}) {
			t.Errorf("the server saw client %v, want worker-1", got[len(got)-1].clientNames)
		}
	})
	t.Run("certificate PEM", func(t *testing.T) {
		pair := ca.Client("worker-2")
		client := dial(t, srv.addr, statewright.WithCAPEM(ca.CertPEM), statewright.WithClientCertPEM(pair.CertPEM, pair.KeyPEM),
			statewright.WithToken("sw_two"))
		everyKind(t, ctx, client)
		got := srv.seen()
		for _, c := range got[len(got)-3:] {
			if !slices.Equal(c.clientNames, []string{"worker-2"}) || !slices.Equal(c.authorization, []string{"Bearer sw_two"}) {
				t.Errorf("%s: client %v, authorization %q; want worker-2 and Bearer sw_two", c.method, c.clientNames, c.authorization)
			}
		}
	})
	t.Run("no certificate", func(t *testing.T) {
		before := len(srv.seen())
		client := dial(t, srv.addr, statewright.WithCAFile(ca.CertFile()), noRetry)
		err := getWorkflow(ctx, client)
		// Under TLS 1.3 the refusal comes after the client's side of the handshake, so
		// how the connection ends (an alert, a broken pipe) varies; the code does not.
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("without a client certificate: %v, want UNAVAILABLE", err)
		}
		if len(srv.seen()) != before {
			t.Error("a call without a client certificate reached the server")
		}
	})
	t.Run("certificate of another CA", func(t *testing.T) {
		before := len(srv.seen())
		stranger := testpki.NewCA(t, "stranger").Client("intruder")
		client := dial(t, srv.addr, statewright.WithCAFile(ca.CertFile()), statewright.WithClientCertFiles(stranger.CertFile, stranger.KeyFile), noRetry)
		if err := getWorkflow(ctx, client); status.Code(err) != codes.Unavailable {
			t.Fatalf("with another CA's certificate: %v, want UNAVAILABLE", err)
		}
		if len(srv.seen()) != before {
			t.Error("a call with another CA's certificate reached the server")
		}
	})
}

func TestTLSVerifiesTheServer(t *testing.T) {
	ca := testpki.NewCA(t, "ca")
	srv := startSecured(t, tlsServerConfig(t, ca, tls.NoClientCert))
	ctx := testContext(t)
	// want is what the failure says (a plaintext client's connection ends in one of several
	// ways); empty: the call succeeds.
	for name, tc := range map[string]struct {
		opts []statewright.Option
		want string
	}{
		"its CA":                   {opts: []statewright.Option{statewright.WithCAFile(ca.CertFile())}},
		"its CA, the DNS name":     {opts: []statewright.Option{statewright.WithCAFile(ca.CertFile()), statewright.WithTLSServerName("localhost")}},
		"its CA, another name":     {opts: []statewright.Option{statewright.WithCAFile(ca.CertFile()), statewright.WithTLSServerName("elsewhere.example")}, want: "not elsewhere.example"},
		"another CA":               {opts: []statewright.Option{statewright.WithCAPEM(testpki.NewCA(t, "other").CertPEM)}, want: "unknown authority"},
		"the system roots":         {opts: []statewright.Option{statewright.WithTLS()}, want: "unknown authority"},
		"plaintext on a TLS port":  {want: "code = Unavailable"},
		"transport credentials":    {opts: []statewright.Option{statewright.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}))}},
		"insecure transport creds": {opts: []statewright.Option{statewright.WithTransportCredentials(insecure.NewCredentials())}, want: "code = Unavailable"},
	} {
		t.Run(name, func(t *testing.T) {
			err := getWorkflow(ctx, dial(t, srv.addr, append(tc.opts, noRetry)...))
			if tc.want == "" && err != nil {
				t.Fatalf("call failed: %v", err)
			}
			if tc.want != "" && (status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("call: %v, want UNAVAILABLE, %s", err, tc.want)
			}
		})
	}
}

func TestTokenSource(t *testing.T) {
	ca := testpki.NewCA(t, "ca")
	srv := startSecured(t, tlsServerConfig(t, ca, tls.NoClientCert))
	ctx := testContext(t)
	authorizations := func(from int) []string {
		var out []string
		for _, c := range srv.seen()[from:] {
			out = append(out, strings.Join(c.authorization, ","))
		}
		return out
	}

	t.Run("asked for every call when its tokens have no expiry", func(t *testing.T) {
		from := len(srv.seen())
		var asked atomic.Int32
		client := dial(t, srv.addr, statewright.WithCAFile(ca.CertFile()), statewright.WithTokenSource(
			statewright.TokenSourceFunc(func(context.Context) (statewright.Token, error) {
				return statewright.Token{Value: fmt.Sprintf("t-%d", asked.Add(1))}, nil
			})))
		everyKind(t, ctx, client)
		if got := authorizations(from); !slices.Equal(got, []string{"Bearer t-1", "Bearer t-2", "Bearer t-3"}) {
			t.Errorf("the server saw %v", got)
		}
	})

	t.Run("reused until near expiry, shared by concurrent calls, dropped when refused", func(t *testing.T) {
		from := len(srv.seen())
		var asked atomic.Int32
		client := dial(t, srv.addr, statewright.WithCAFile(ca.CertFile()), statewright.WithTokenSource(
			statewright.TokenSourceFunc(func(context.Context) (statewright.Token, error) {
				return statewright.Token{Value: fmt.Sprintf("jwt-%d", asked.Add(1)), Expiry: time.Now().Add(time.Hour)}, nil
			})))
		var calls sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			calls.Go(func() { errs <- getWorkflow(ctx, client) })
		}
		calls.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if got := asked.Load(); got != 1 {
			t.Fatalf("the source was asked %d times for 8 calls, want once", got)
		}
		// The server refuses jwt-1 from now on (revoked): the next call fails, and the one
		// after asks the source again.
		srv.mu.Lock()
		srv.refuse = func(auth []string) bool { return slices.Equal(auth, []string{"Bearer jwt-1"}) }
		srv.mu.Unlock()
		t.Cleanup(func() {
			srv.mu.Lock()
			srv.refuse = nil
			srv.mu.Unlock()
		})
		if err := getWorkflow(ctx, client); !errors.Is(err, statewright.ErrUnauthenticated) {
			t.Fatalf("a call with the revoked token: %v, want ErrUnauthenticated", err)
		}
		if err := getWorkflow(ctx, client); err != nil {
			t.Fatalf("the call after: %v", err)
		}
		got := authorizations(from)
		if want := append(slices.Repeat([]string{"Bearer jwt-1"}, 9), "Bearer jwt-2"); !slices.Equal(got, want) {
			t.Errorf("the server saw %v, want %v", got, want)
		}
	})

	t.Run("not reused within the refresh margin", func(t *testing.T) {
		var asked atomic.Int32
		client := dial(t, srv.addr, statewright.WithCAFile(ca.CertFile()), statewright.WithTokenSource(
			statewright.TokenSourceFunc(func(context.Context) (statewright.Token, error) {
				asked.Add(1)
				return statewright.Token{Value: "short", Expiry: time.Now().Add(statewright.TokenRefreshMargin / 2)}, nil
			})))
		for range 3 {
			if err := getWorkflow(ctx, client); err != nil {
				t.Fatal(err)
			}
		}
		if got := asked.Load(); got != 3 {
			t.Errorf("the source was asked %d times for 3 calls, want 3", got)
		}
	})

	t.Run("a failing source fails the call before it is sent", func(t *testing.T) {
		from := len(srv.seen())
		client := dial(t, srv.addr, statewright.WithCAFile(ca.CertFile()), statewright.WithTokenSource(
			statewright.TokenSourceFunc(func(context.Context) (statewright.Token, error) {
				return statewright.Token{}, errors.New("the vault is sealed")
			})))
		err := getWorkflow(ctx, client)
		if !errors.Is(err, statewright.ErrUnauthenticated) || !strings.Contains(err.Error(), "the vault is sealed") {
			t.Fatalf("call: %v, want ErrUnauthenticated with the source's error", err)
		}
		if got := authorizations(from); len(got) != 0 {
			t.Errorf("the server saw %v", got)
		}
	})
}

func TestTokenOverPlaintext(t *testing.T) {
	for _, target := range []string{
		"127.0.0.1:50051", "127.8.9.10:1", "localhost:50051", "LOCALHOST.:1", "[::1]:50051", "::1",
		"dns:///localhost:50051", "dns://8.8.8.8/127.0.0.1:50051", "passthrough:///127.0.0.1:1",
		"ipv4:127.0.0.1:1,127.0.0.2:2", "unix:///run/statewright.sock", "unix:statewright.sock",
	} {
		client, err := statewright.NewClient(target, statewright.WithToken("x"))
		if err != nil {
			t.Errorf("%s is on this machine, yet: %v", target, err)
			continue
		}
		_ = client.Close()
	}
	for _, target := range []string{
		"example.com:50051", "10.0.0.7:50051", "[2001:db8::1]:50051", "dns:///statewright.prod:443",
		"passthrough:///bufnet", "ipv4:127.0.0.1:1,10.0.0.7:2", "xds:///statewright", "localhost.example.com:1",
	} {
		_, err := statewright.NewClient(target, statewright.WithToken("x"))
		if !errors.Is(err, statewright.ErrTokenOverPlaintext) {
			t.Errorf("%s: NewClient = %v, want ErrTokenOverPlaintext", target, err)
			continue
		}
		for _, want := range []string{target, "TLS", "WithTokenOverPlaintext"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: the error %q does not mention %s", target, err, want)
			}
		}
		for name, opt := range map[string]statewright.Option{
			"WithTokenOverPlaintext": statewright.WithTokenOverPlaintext(),
			"WithTLS":                statewright.WithTLS(),
			"TLS credentials":        statewright.WithTransportCredentials(credentials.NewTLS(nil)),
		} {
			client, err := statewright.NewClient(target, statewright.WithToken("x"), opt)
			if err != nil {
				t.Errorf("%s with %s: %v", target, name, err)
				continue
			}
			_ = client.Close()
		}
		if _, err := statewright.NewClient(target, statewright.WithToken("x"),
			statewright.WithTransportCredentials(insecure.NewCredentials())); !errors.Is(err, statewright.ErrTokenOverPlaintext) {
			t.Errorf("%s with insecure transport credentials: %v, want ErrTokenOverPlaintext", target, err)
		}
	}

	// Over loopback the token goes in plaintext; with TLS asked for, gRPC itself refuses
	// a later dial option that swaps the transport for plaintext.
	srv := startSecured(t, nil)
	if err := getWorkflow(testContext(t), dial(t, srv.addr, statewright.WithToken("local"))); err != nil {
		t.Fatal(err)
	}
	if got := srv.seen(); !slices.Equal(got[0].authorization, []string{"Bearer local"}) {
		t.Errorf("the server saw %q", got[0].authorization)
	}
	if _, err := statewright.NewClient(srv.addr, statewright.WithTLS(), statewright.WithToken("x"),
		statewright.WithDialOptions(grpc.WithTransportCredentials(insecure.NewCredentials()))); err == nil {
		t.Error("a TLS client whose transport was swapped for plaintext would send its token")
	}
}

func TestOptionErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := testpki.NewCA(t, "ca")
	pair := ca.Client("c")
	other := ca.Client("d")
	for name, tc := range map[string]struct {
		opts []statewright.Option
		want string
	}{
		"empty token":             {[]statewright.Option{statewright.WithToken("")}, "the token is empty"},
		"nil token source":        {[]statewright.Option{statewright.WithTokenSource(nil)}, "nil source"},
		"missing CA file":         {[]statewright.Option{statewright.WithCAFile(filepath.Join(dir, "absent.pem"))}, "absent.pem"},
		"CA file of no PEM":       {[]statewright.Option{statewright.WithCAFile(garbage)}, "garbage.pem holds no PEM certificate"},
		"CA PEM of no PEM":        {[]statewright.Option{statewright.WithCAPEM([]byte("x"))}, "the CA PEM holds no PEM certificate"},
		"missing certificate":     {[]statewright.Option{statewright.WithClientCertFiles(filepath.Join(dir, "absent.crt"), pair.KeyFile)}, "absent.crt"},
		"certificate and another": {[]statewright.Option{statewright.WithClientCertFiles(pair.CertFile, other.KeyFile)}, "private key does not match"},
		"PEM pair that differs":   {[]statewright.Option{statewright.WithClientCertPEM(pair.CertPEM, other.KeyPEM)}, "private key does not match"},
		"two kinds of TLS":        {[]statewright.Option{statewright.WithCAFile(ca.CertFile()), statewright.WithTransportCredentials(insecure.NewCredentials())}, "give one or the other"},
		"server name, no TLS":     {[]statewright.Option{statewright.WithTLSServerName("x")}, "WithTLSServerName without TLS"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := statewright.NewClient("127.0.0.1:1", tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewClient = %v, want an error about %q", err, tc.want)
			}
		})
	}
}

// unsetenv clears name for the test, and restores it after.
func unsetenv(t *testing.T, name string) {
	t.Helper()
	t.Setenv(name, "")
	if err := os.Unsetenv(name); err != nil {
		t.Fatal(err)
	}
}

func clearEnv(t *testing.T) {
	t.Helper()
	for _, name := range []string{
		statewright.EnvAddressVar, statewright.EnvTargetVar, statewright.EnvTokenVar,
		statewright.EnvTLSCAVar, statewright.EnvTLSCertVar, statewright.EnvTLSKeyVar,
	} {
		unsetenv(t, name)
	}
}

func TestEnvAddress(t *testing.T) {
	clearEnv(t)
	if got := statewright.EnvAddress(); got != "127.0.0.1:50051" {
		t.Errorf("nothing set: %q", got)
	}
	t.Setenv("STATEWRIGHT_TARGET", "old:1")
	if got := statewright.EnvAddress(); got != "old:1" {
		t.Errorf("STATEWRIGHT_TARGET alone: %q", got)
	}
	t.Setenv("STATEWRIGHT_ADDRESS", "new:2")
	if got := statewright.EnvAddress(); got != "new:2" {
		t.Errorf("both set: %q, want STATEWRIGHT_ADDRESS's", got)
	}
	t.Setenv("STATEWRIGHT_ADDRESS", "")
	if got := statewright.EnvAddress(); got != "old:1" {
		t.Errorf("STATEWRIGHT_ADDRESS empty: %q, want STATEWRIGHT_TARGET's", got)
	}
}

func TestClientFromEnv(t *testing.T) {
	ca := testpki.NewCA(t, "ca")
	srv := startSecured(t, tlsServerConfig(t, ca, tls.VerifyClientCertIfGiven))
	ctx := testContext(t)
	last := func() seenCall { got := srv.seen(); return got[len(got)-1] }

	t.Run("a CA and a token", func(t *testing.T) {
		clearEnv(t)
		t.Setenv("STATEWRIGHT_TARGET", srv.addr)
		t.Setenv("STATEWRIGHT_TLS_CA", ca.CertFile())
		t.Setenv("STATEWRIGHT_TOKEN", "sw_env\n")
		client, err := statewright.NewClientFromEnv()
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		everyKind(t, ctx, client)
		for _, c := range srv.seen()[len(srv.seen())-3:] {
			if !slices.Equal(c.authorization, []string{"Bearer sw_env"}) || c.clientNames != nil {
				t.Errorf("%s: authorization %q, client %v", c.method, c.authorization, c.clientNames)
			}
		}
	})
	t.Run("mTLS, and an explicit token over the environment's", func(t *testing.T) {
		clearEnv(t)
		pair := ca.Client("env-worker")
		t.Setenv("STATEWRIGHT_ADDRESS", srv.addr)
		t.Setenv("STATEWRIGHT_TARGET", "127.0.0.1:1")
		t.Setenv("STATEWRIGHT_TLS_CA", ca.CertFile())
		t.Setenv("STATEWRIGHT_TLS_CERT", pair.CertFile)
		t.Setenv("STATEWRIGHT_TLS_KEY", pair.KeyFile)
		t.Setenv("STATEWRIGHT_TOKEN", "sw_env")
		client, err := statewright.NewClientFromEnv(statewright.WithToken("sw_explicit"))
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		if err := getWorkflow(ctx, client); err != nil {
			t.Fatal(err)
		}
		if c := last(); !slices.Equal(c.clientNames, []string{"env-worker"}) || !slices.Equal(c.authorization, []string{"Bearer sw_explicit"}) {
			t.Errorf("client %v, authorization %q", c.clientNames, c.authorization)
		}
	})
	t.Run("nothing set: plaintext, no token", func(t *testing.T) {
		clearEnv(t)
		plain := startSecured(t, nil)
		client := dial(t, plain.addr, statewright.FromEnv())
		if err := getWorkflow(ctx, client); err != nil {
			t.Fatal(err)
		}
		if got := plain.seen(); got[0].authorization != nil {
			t.Errorf("authorization %q with no token set", got[0].authorization)
		}
	})
	t.Run("a client certificate alone turns TLS on", func(t *testing.T) {
		clearEnv(t)
		pair := ca.Client("c")
		t.Setenv("STATEWRIGHT_ADDRESS", "statewright.example:443")
		t.Setenv("STATEWRIGHT_TOKEN", "sw_x")
		if _, err := statewright.NewClientFromEnv(); !errors.Is(err, statewright.ErrTokenOverPlaintext) {
			t.Fatalf("a token and no TLS variable, to a remote address: %v, want ErrTokenOverPlaintext", err)
		}
		t.Setenv("STATEWRIGHT_TLS_CERT", pair.CertFile)
		t.Setenv("STATEWRIGHT_TLS_KEY", pair.KeyFile)
		client, err := statewright.NewClientFromEnv()
		if err != nil {
			t.Fatalf("with a client certificate (TLS, the system roots): %v", err)
		}
		_ = client.Close()
	})
	for _, tc := range []struct{ set, unset string }{
		{"STATEWRIGHT_TLS_CERT", "STATEWRIGHT_TLS_KEY"},
		{"STATEWRIGHT_TLS_KEY", "STATEWRIGHT_TLS_CERT"},
	} {
		t.Run(tc.set+" alone", func(t *testing.T) {
			clearEnv(t)
			t.Setenv(tc.set, ca.Client("half").CertFile)
			_, err := statewright.NewClientFromEnv()
			want := tc.set + " is set but " + tc.unset + " is not"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("NewClientFromEnv = %v, want %q", err, want)
			}
		})
	}
	t.Run("a CA file that is not there", func(t *testing.T) {
		clearEnv(t)
		t.Setenv("STATEWRIGHT_TLS_CA", filepath.Join(t.TempDir(), "ca.pem"))
		if _, err := statewright.NewClientFromEnv(); err == nil || !strings.Contains(err.Error(), "ca.pem") {
			t.Errorf("NewClientFromEnv = %v, want an error naming the file", err)
		}
	})
}
