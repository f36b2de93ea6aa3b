// Package statewright is a small layer over the generated statewright.v1 gRPC client
// (package statewrightv1): a connection set up with the service config shipped with the
// API, TLS, mTLS and a bearer token (Option, FromEnv), a WatchWorkflow that resumes after
// dropped connections (Client.Watch), a task worker (NewWorker), and typed errors (Error)
// with helpers that read the google.rpc.ErrorInfo every Statewright error carries.
package statewright

import (
	"context"
	"errors"
	"fmt"
	"io"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// Client is a WorkflowService, TaskService, ScheduleService and BatchService client over
// its own connection. Every generated method of the four is available on it directly
// (StartWorkflow, ResumeWorkflow, WatchWorkflow, ..., PollTasks, HeartbeatTask,
// CompleteTask, FailTask, GetTask, ListTasks, CreateSchedule, GetSchedule, ...,
// BackfillSchedule, StartBatchOperation, GetBatchOperation, ListBatchOperations,
// CancelBatchOperation); the services share no method name. A failed call's error is an
// *Error.
type Client struct {
	statewrightv1.WorkflowServiceClient
	statewrightv1.TaskServiceClient
	statewrightv1.ScheduleServiceClient
	statewrightv1.BatchServiceClient
	conn   *grpc.ClientConn
	bearer *bearer
}

// NewClient creates a client for target ("host:port" or any gRPC target) that uses
// statewrightv1.DefaultServiceConfig: per-method timeouts, and retries with backoff for
// UNAVAILABLE only. Without options it speaks plaintext and sends no token, as to
// `make dev`'s server; see Option for TLS, mTLS and tokens, and FromEnv for the
// environment. A service config published by the name resolver takes precedence, as
// grpc-go defines; no connection is made until the first call.
//
// It fails (wrapping ErrTokenOverPlaintext) when a token would go unencrypted to an
// address that is not a loopback one, unless WithTokenOverPlaintext is given.
func NewClient(target string, opts ...Option) (*Client, error) {
	var s settings
	for _, opt := range opts {
		opt(&s)
	}
	if err := errors.Join(s.errs...); err != nil {
		return nil, err
	}
	creds, secure, err := s.transportCredentials()
	if err != nil {
		return nil, err
	}
	c := &Client{}
	all := []grpc.DialOption{
		grpc.WithDefaultServiceConfig(statewrightv1.DefaultServiceConfig),
		grpc.WithTransportCredentials(creds),
		grpc.WithChainUnaryInterceptor(c.unaryInterceptor),
		grpc.WithChainStreamInterceptor(c.streamInterceptor),
		// Client spans, and the caller's trace context in every call's metadata.
		grpc.WithStatsHandler(otelgrpc.NewClientHandler()),
	}
	if s.tokens != nil {
		if !secure && !s.tokenOverPlaintext && !loopbackTarget(target) {
			return nil, fmt.Errorf("%w to %s, which is not a loopback address: turn TLS on "+
				"(WithTLS or WithCAFile; from the environment, %s), or allow it knowingly with WithTokenOverPlaintext",
				ErrTokenOverPlaintext, target, EnvTLSCAVar)
		}
		c.bearer = newBearer(s.tokens, secure)
		all = append(all, grpc.WithPerRPCCredentials(c.bearer))
	}
	conn, err := grpc.NewClient(target, append(all, s.dial...)...)
	if err != nil {
		return nil, fmt.Errorf("statewright: connecting to %s: %w", target, err)
	}
	c.WorkflowServiceClient = statewrightv1.NewWorkflowServiceClient(conn)
	c.TaskServiceClient = statewrightv1.NewTaskServiceClient(conn)
	c.ScheduleServiceClient = statewrightv1.NewScheduleServiceClient(conn)
	c.BatchServiceClient = statewrightv1.NewBatchServiceClient(conn)
	c.conn = conn
	return c, nil
}

// NewClientFromEnv creates a client for EnvAddress() configured by FromEnv() and then
// opts: STATEWRIGHT_ADDRESS (or STATEWRIGHT_TARGET, or 127.0.0.1:50051), STATEWRIGHT_TOKEN,
// STATEWRIGHT_TLS_CA, STATEWRIGHT_TLS_CERT and STATEWRIGHT_TLS_KEY.
func NewClientFromEnv(opts ...Option) (*Client, error) {
	return NewClient(EnvAddress(), append([]Option{FromEnv()}, opts...)...)
}

// Conn returns the underlying connection, for example to build a health client on it.
// Calls made on it carry the token and return *Error too: both belong to the connection.
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Close closes the connection; calls in flight fail with CANCELED.
func (c *Client) Close() error { return c.conn.Close() }

// WorkflowName returns the resource name of the instance with the given id,
// "workflows/{workflow_id}".
func WorkflowName(workflowID string) string { return "workflows/" + workflowID }

func (c *Client) unaryInterceptor(ctx context.Context, method string, req, reply any,
	cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption,
) error {
	return c.callError(invoker(ctx, method, req, reply, cc, opts...))
}

func (c *Client) streamInterceptor(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn,
	method string, streamer grpc.Streamer, opts ...grpc.CallOption,
) (grpc.ClientStream, error) {
	stream, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, c.callError(err)
	}
	return &typedErrorStream{ClientStream: stream, client: c}, nil
}

// callError types a call's error, and forgets a token the server refused.
func (c *Client) callError(err error) error {
	err = wrapError(err)
	if c.bearer != nil {
		var e *Error
		if errors.As(err, &e) && e.Code == codes.Unauthenticated {
			c.bearer.forget()
		}
	}
	return err
}

// typedErrorStream gives a stream's errors the same treatment as a unary call's; a
// stream's failure shows in RecvMsg (SendMsg answers io.EOF then).
type typedErrorStream struct {
	grpc.ClientStream
	client *Client
}

func (s *typedErrorStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == nil || errors.Is(err, io.EOF) {
		return err
	}
	return s.client.callError(err)
}
