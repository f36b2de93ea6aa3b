package statewright_test

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/statewright/statewright/clients/go/statewright"
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
