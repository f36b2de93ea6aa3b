package statewright

import (
	"errors"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
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

// ReasonRateLimited is the ErrorInfo reason of a call refused because its caller is over
// its request rate; the status carries a RetryInfo saying when to try again.
const ReasonRateLimited = "RATE_LIMITED"

// Sentinels that errors.Is matches against the errors a Client returns (an *Error).
var (
	// ErrUnauthenticated: the call carried no credentials the server accepts (no token, an
	// expired, forged or unknown one, or no client certificate where one is required), or
	// the token source failed. Code UNAUTHENTICATED.
	ErrUnauthenticated = errors.New("statewright: unauthenticated")
	// ErrPermissionDenied: the caller is known but its roles, or their scopes (definition
	// names, task queues), do not allow this call on this target; the error never says
	// whether the target exists. Code PERMISSION_DENIED.
	ErrPermissionDenied = errors.New("statewright: permission denied")
	// ErrRateLimited: the caller is over its request rate (RESOURCE_EXHAUSTED, reason
	// RATE_LIMITED); RetryDelay says when the next call would be let through.
	ErrRateLimited = errors.New("statewright: rate limited")
)

// Error is a failed call's error as a Client returns it: the gRPC status error with its
// ErrorInfo and RetryInfo read out. It wraps the status error, so status.Code,
// status.FromError, ErrorInfo and Reason read it as they read that error, and errors.Is
// matches it against ErrUnauthenticated, ErrPermissionDenied and ErrRateLimited.
type Error struct {
	// Code is the canonical gRPC code.
	Code codes.Code
	// Reason is the ErrorInfo reason (UPPER_SNAKE), or "" without an ErrorInfo (for
	// example a connection refused before any server answered).
	Reason string
	// Metadata is the ErrorInfo's metadata: the error's dynamic values.
	Metadata map[string]string
	// Message is the status message.
	Message string
	// RetryDelay is the RetryInfo's delay, when the server sent one (as it does with
	// RATE_LIMITED), or zero.
	RetryDelay time.Duration

	err error
	st  *status.Status
}

// AsError converts a failed call's error (possibly wrapped) to an *Error; ok is false
// when err carries no gRPC status. Client's methods return *Error already; this is for
// errors from elsewhere, for example a generated client on a connection of one's own.
func AsError(err error) (e *Error, ok bool) {
	if errors.As(err, &e) {
		return e, true
	}
	st, ok := grpcStatus(err)
	if !ok {
		return nil, false
	}
	e = &Error{Code: st.Code(), Message: st.Message(), err: err, st: st}
	for _, detail := range st.Details() {
		switch d := detail.(type) {
		case *errdetails.ErrorInfo:
			if e.Reason == "" {
				e.Reason, e.Metadata = d.GetReason(), d.GetMetadata()
			}
		case *errdetails.RetryInfo:
			if delay := d.GetRetryDelay(); delay != nil && delay.IsValid() && delay.AsDuration() > 0 {
				e.RetryDelay = delay.AsDuration()
			}
		}
	}
	return e, true
}

// Error is the wrapped status error's text.
func (e *Error) Error() string { return e.err.Error() }

// Unwrap returns the status error.
func (e *Error) Unwrap() error { return e.err }

// GRPCStatus is the call's status, for status.FromError and status.Code.
func (e *Error) GRPCStatus() *status.Status { return e.st }

// Is matches the sentinels: ErrUnauthenticated and ErrPermissionDenied by code,
// ErrRateLimited by reason.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrUnauthenticated:
		return e.Code == codes.Unauthenticated
	case ErrPermissionDenied:
		return e.Code == codes.PermissionDenied
	case ErrRateLimited:
		return e.Code == codes.ResourceExhausted && e.Reason == ReasonRateLimited
	}
	return false
}

// RetryDelay returns the delay of the google.rpc.RetryInfo in err's status, which the
// server sends with RATE_LIMITED: how long until a call would be let through. ok is false
// when err carries no RetryInfo (or a zero or invalid delay).
func RetryDelay(err error) (delay time.Duration, ok bool) {
	e, found := AsError(err)
	if !found || e.RetryDelay <= 0 {
		return 0, false
	}
	return e.RetryDelay, true
}

// wrapError turns a call's status error into an *Error; io.EOF, nil and errors without a
// status stay as they are.
func wrapError(err error) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	if e, ok := AsError(err); ok {
		return e
	}
	return err
}
