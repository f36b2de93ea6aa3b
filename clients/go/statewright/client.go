// Package statewright is a small layer over the generated statewright.v1 gRPC client
// (package statewrightv1): a connection set up with the service config shipped with the
// API, a WatchWorkflow that resumes after dropped connections (Client.Watch), a task worker
// (NewWorker), and helpers that read the google.rpc.ErrorInfo every Statewright error
// carries.
package statewright

import (
	"fmt"

	"google.golang.org/grpc"

	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// Client is a WorkflowService and TaskService client over its own connection. Every
// generated method of both is available on it directly (StartWorkflow, ResumeWorkflow,
// WatchWorkflow, ..., PollTasks, HeartbeatTask, CompleteTask, FailTask, GetTask,
// ListTasks); the two services share no method name.
type Client struct {
	statewrightv1.WorkflowServiceClient
	statewrightv1.TaskServiceClient
	conn *grpc.ClientConn
}

// NewClient creates a client for target ("host:port" or any gRPC target) that uses
// statewrightv1.DefaultServiceConfig: per-method timeouts, and retries with backoff for
// UNAVAILABLE only. The caller supplies the transport credentials among opts, for example
// grpc.WithTransportCredentials(insecure.NewCredentials()) for a local server. A service
// config published by the name resolver takes precedence, as grpc-go defines; no
// connection is made until the first call.
func NewClient(target string, opts ...grpc.DialOption) (*Client, error) {
	all := append([]grpc.DialOption{grpc.WithDefaultServiceConfig(statewrightv1.DefaultServiceConfig)}, opts...)
	conn, err := grpc.NewClient(target, all...)
	if err != nil {
		return nil, fmt.Errorf("statewright: connecting to %s: %w", target, err)
	}
	return &Client{
		WorkflowServiceClient: statewrightv1.NewWorkflowServiceClient(conn),
		TaskServiceClient:     statewrightv1.NewTaskServiceClient(conn),
		conn:                  conn,
	}, nil
}

// Conn returns the underlying connection, for example to build a health client on it.
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Close closes the connection; calls in flight fail with CANCELED.
func (c *Client) Close() error { return c.conn.Close() }

// WorkflowName returns the resource name of the instance with the given id,
// "workflows/{workflow_id}".
func WorkflowName(workflowID string) string { return "workflows/" + workflowID }
