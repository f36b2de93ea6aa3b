package statewright_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/statewright/statewright/clients/go/statewright"
	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

func revisionMismatch(t *testing.T) error {
	t.Helper()
	st, err := status.New(codes.Aborted, "revision mismatch").WithDetails(
		&errdetails.RetryInfo{},
		&errdetails.ErrorInfo{
			Reason:   "REVISION_MISMATCH",
			Domain:   statewright.Domain,
			Metadata: map[string]string{"actual_revision": "3", "expected_revision": "2"},
		})
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

func TestErrorInfoReadsReasonAndMetadata(t *testing.T) {
	info, ok := statewright.ErrorInfo(revisionMismatch(t))
	if !ok {
		t.Fatal("ErrorInfo: not found")
	}
	if info.GetReason() != "REVISION_MISMATCH" || info.GetDomain() != "statewright.dev" {
		t.Errorf("reason/domain = %q/%q", info.GetReason(), info.GetDomain())
	}
	if got := info.GetMetadata()["actual_revision"]; got != "3" {
		t.Errorf("actual_revision = %q, want 3", got)
	}
}

func TestErrorInfoUnwrapsWrappedErrors(t *testing.T) {
	err := fmt.Errorf("resuming: %w", revisionMismatch(t))
	if got := statewright.Reason(err); got != "REVISION_MISMATCH" {
		t.Errorf("Reason(wrapped) = %q", got)
	}
}

func TestErrorInfoAbsent(t *testing.T) {
	for name, err := range map[string]error{
		"nil":             nil,
		"plain error":     errors.New("boom"),
		"status, no info": status.Error(codes.Unavailable, "down"),
		"OK status":       status.New(codes.OK, "").Err(),
		"wrapped no info": fmt.Errorf("x: %w", status.Error(codes.NotFound, "gone")),
	} {
		if info, ok := statewright.ErrorInfo(err); ok || info != nil {
			t.Errorf("%s: ErrorInfo = %v, %v; want nil, false", name, info, ok)
		}
		if got := statewright.Reason(err); got != "" {
			t.Errorf("%s: Reason = %q; want empty", name, got)
		}
	}
}

func TestWorkflowName(t *testing.T) {
	if got := statewright.WorkflowName("mail-1"); got != "workflows/mail-1" {
		t.Errorf("WorkflowName = %q", got)
	}
}

func rateLimited(t *testing.T, delay time.Duration) error {
	t.Helper()
	st, err := status.New(codes.ResourceExhausted, "over its rate").WithDetails(
		&errdetails.ErrorInfo{Reason: "RATE_LIMITED", Domain: statewright.Domain, Metadata: map[string]string{"limit": "5/s"}},
		&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

// refusingServer answers GetWorkflow and WatchWorkflow with the error named by the
// instance's id.
type refusingServer struct {
	statewrightv1.UnimplementedWorkflowServiceServer
	errs map[string]error
}

func (s *refusingServer) GetWorkflow(_ context.Context, req *statewrightv1.GetWorkflowRequest) (*statewrightv1.GetWorkflowResponse, error) {
	return nil, s.errs[req.GetName()]
}

func (s *refusingServer) WatchWorkflow(req *statewrightv1.WatchWorkflowRequest, _ statewrightv1.WorkflowService_WatchWorkflowServer) error {
	return s.errs[req.GetName()]
}

func TestClientErrorsAreTyped(t *testing.T) {
	srv := &refusingServer{errs: map[string]error{
		"workflows/unauthenticated": reasonError(codes.Unauthenticated, "UNAUTHENTICATED"),
		"workflows/denied":          reasonError(codes.PermissionDenied, "PERMISSION_DENIED"),
		"workflows/limited":         rateLimited(t, 40*time.Millisecond),
		"workflows/overloaded":      reasonError(codes.ResourceExhausted, "OVERLOADED"),
		"workflows/absent":          reasonError(codes.NotFound, "WORKFLOW_NOT_FOUND"),
	}}
	client := newTestClient(t, srv)
	sentinels := []error{statewright.ErrUnauthenticated, statewright.ErrPermissionDenied, statewright.ErrRateLimited}
	for _, tc := range []struct {
		id       string
		code     codes.Code
		reason   string
		sentinel error
		delay    time.Duration
	}{
		{"unauthenticated", codes.Unauthenticated, "UNAUTHENTICATED", statewright.ErrUnauthenticated, 0},
		{"denied", codes.PermissionDenied, "PERMISSION_DENIED", statewright.ErrPermissionDenied, 0},
		{"limited", codes.ResourceExhausted, "RATE_LIMITED", statewright.ErrRateLimited, 40 * time.Millisecond},
		{"overloaded", codes.ResourceExhausted, "OVERLOADED", nil, 0},
		{"absent", codes.NotFound, "WORKFLOW_NOT_FOUND", nil, 0},
	} {
		_, unary := client.GetWorkflow(context.Background(), &statewrightv1.GetWorkflowRequest{Name: "workflows/" + tc.id})
		watch := client.Watch(context.Background(), tc.id, statewright.WatchOptions{ReconnectBudget: time.Millisecond},
			func(*statewrightv1.WatchWorkflowResponse) error { return nil })
		for kind, err := range map[string]error{"GetWorkflow": unary, "Watch": watch} {
			var e *statewright.Error
			if !errors.As(err, &e) {
				t.Errorf("%s %s: %T %v, want an *Error", kind, tc.id, err, err)
				continue
			}
			if e.Code != tc.code || e.Reason != tc.reason || e.RetryDelay != tc.delay {
				t.Errorf("%s %s: code %v, reason %q, delay %v", kind, tc.id, e.Code, e.Reason, e.RetryDelay)
			}
			for _, s := range sentinels {
				if errors.Is(err, s) != (s == tc.sentinel) {
					t.Errorf("%s %s: errors.Is(%v) = %v", kind, tc.id, s, errors.Is(err, s))
				}
			}
			// The status error's readers see through it.
			if status.Code(err) != tc.code || statewright.Reason(err) != tc.reason {
				t.Errorf("%s %s: status.Code %v, Reason %q", kind, tc.id, status.Code(err), statewright.Reason(err))
			}
			if st, ok := status.FromError(err); !ok || st.Message() != e.Message {
				t.Errorf("%s %s: status.FromError = %v, %v", kind, tc.id, st, ok)
			}
		}
	}
}

func TestRetryDelay(t *testing.T) {
	if d, ok := statewright.RetryDelay(fmt.Errorf("polling: %w", rateLimited(t, 250*time.Millisecond))); !ok || d != 250*time.Millisecond {
		t.Errorf("RetryDelay(wrapped RATE_LIMITED) = %v, %v", d, ok)
	}
	e, ok := statewright.AsError(rateLimited(t, time.Second))
	if !ok || !errors.Is(e, statewright.ErrRateLimited) || e.Metadata["limit"] != "5/s" {
		t.Errorf("AsError(RATE_LIMITED) = %+v, %v", e, ok)
	}
	for name, err := range map[string]error{
		"nil":              nil,
		"plain error":      errors.New("boom"),
		"no RetryInfo":     revisionMismatch(t),
		"zero delay":       rateLimited(t, 0),
		"negative delay":   rateLimited(t, -time.Second),
		"status, no extra": status.Error(codes.ResourceExhausted, "full"),
	} {
		if d, ok := statewright.RetryDelay(err); ok || d != 0 {
			t.Errorf("%s: RetryDelay = %v, %v; want 0, false", name, d, ok)
		}
	}
	if _, ok := statewright.AsError(errors.New("boom")); ok {
		t.Error("AsError of an error without a status succeeded")
	}
}
