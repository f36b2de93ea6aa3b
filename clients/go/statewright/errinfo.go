package statewright

import (
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
)

// Domain is the ErrorInfo domain of every error a Statewright server sends.
const Domain = "statewright.dev"

// ErrorInfo returns the google.rpc.ErrorInfo in the status details of err, a failed gRPC
// call's error (possibly wrapped). ok is false when err carries no gRPC status or its
// status has no ErrorInfo. A Statewright server attaches exactly one ErrorInfo to every
// error: its Reason (UPPER_SNAKE, for example "REVISION_MISMATCH") is what to branch on,
// and its Metadata holds the dynamic values (for example "actual_revision").
func ErrorInfo(err error) (info *errdetails.ErrorInfo, ok bool) {
	st, ok := grpcStatus(err)
	if !ok {
		return nil, false
	}
	for _, detail := range st.Details() {
		if info, ok := detail.(*errdetails.ErrorInfo); ok {
			return info, true
		}
	}
	return nil, false
}

// Reason returns the ErrorInfo reason of err, or "" when err carries no ErrorInfo.
func Reason(err error) string {
	if info, ok := ErrorInfo(err); ok {
		return info.GetReason()
	}
	return ""
}

// grpcStatus finds the gRPC status in err's chain. status.FromError already unwraps, but
// it answers a non-nil Unknown status for foreign errors; ok tells them apart.
func grpcStatus(err error) (*status.Status, bool) {
	var withStatus interface{ GRPCStatus() *status.Status }
	if err == nil || !errors.As(err, &withStatus) {
		return nil, false
	}
	st, ok := status.FromError(err)
	return st, ok
}
