// Package apierr holds the domain errors that stores and services return, and
// ToStatus, the one function that turns any error into the gRPC status a
// client sees. Handlers never build statuses for internal failures themselves:
// a fault of the database becomes UNAVAILABLE (or ABORTED for a deadlock or
// serialization failure: see transient.go), and whatever else is not a known
// domain error becomes a generic Internal; in both cases the cause is logged
// server-side, so SQL and stack details never reach a client.
package apierr

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Sentinel kinds. Wrap them (fmt.Errorf("todo %d: %w", id, ErrNotFound)) or
// use the constructors below, which attach a client-safe message.
var (
	ErrNotFound           = errors.New("not found")
	ErrAlreadyExists      = errors.New("already exists")
	ErrInvalidArgument    = errors.New("invalid argument")
	ErrFailedPrecondition = errors.New("failed precondition")
	ErrUnauthenticated    = errors.New("unauthenticated")
	ErrPermissionDenied   = errors.New("permission denied")
	ErrResourceExhausted  = errors.New("resource exhausted")
	ErrUnavailable        = errors.New("unavailable")
	ErrUnimplemented      = errors.New("unimplemented")
	ErrAborted            = errors.New("aborted")
)

// Error is a domain error whose Message is safe to show to a client.
type Error struct {
	Kind    error  // one of the sentinels above
	Message string // client-facing text
	// Violations lists per-field problems for InvalidArgument.
	Violations []FieldViolation
}

// FieldViolation names one bad request field (proto field path) and why.
type FieldViolation struct {
	Field       string
	Description string
}

func (e *Error) Error() string { return e.Message }

// Unwrap lets errors.Is match the sentinel kind.
func (e *Error) Unwrap() error { return e.Kind }

// NotFound reports a missing resource, e.g. NotFound("todo %d not found",
// id).
func NotFound(format string, args ...any) error { return newf(ErrNotFound, format, args...) }

// AlreadyExists reports a uniqueness conflict.
func AlreadyExists(format string, args ...any) error { return newf(ErrAlreadyExists, format, args...) }

// FailedPrecondition reports a state conflict, such as a stale lease token.
func FailedPrecondition(format string, args ...any) error {
	return newf(ErrFailedPrecondition, format, args...)
}

// Unimplemented reports an RPC whose behaviour has not been built yet.
func Unimplemented(format string, args ...any) error { return newf(ErrUnimplemented, format, args...) }

// Unavailable reports a transient condition the client should retry.
func Unavailable(format string, args ...any) error { return newf(ErrUnavailable, format, args...) }

// Unauthenticated reports a missing or invalid credential.
func Unauthenticated(format string, args ...any) error {
	return newf(ErrUnauthenticated, format, args...)
}

// PermissionDenied reports a valid credential that may not do this.
func PermissionDenied(format string, args ...any) error {
	return newf(ErrPermissionDenied, format, args...)
}

// ResourceExhausted reports a limit the caller ran into: a payload over its
// cap, a subscriber too far behind.
func ResourceExhausted(format string, args ...any) error {
	return newf(ErrResourceExhausted, format, args...)
}

// TenantLimit is the RESOURCE_EXHAUSTED of a creation past a per-tenant
// limit of the setting tenant.limits: how many the tenant holds, the limit
// and its field, and what frees a place (fix: "delete one first"). Every
// owner of a capped table answers in these words.
func TenantLimit(held int64, what, field string, most int64, fix string) error {
	return ResourceExhausted("the tenant holds %d %s, the most it may hold (setting tenant.limits, %s = %d); %s",
		held, what, field, most, fix)
}

// Invalid reports bad request fields. Each violation becomes a
// google.rpc.BadRequest detail so clients can point at the field.
func Invalid(violations ...FieldViolation) error {
	msg := "invalid request"
	if len(violations) > 0 {
		msg = fmt.Sprintf("invalid %s: %s", violations[0].Field, violations[0].Description)
		if n := len(violations) - 1; n > 0 {
			msg += fmt.Sprintf(" (and %d more)", n)
		}
	}
	return &Error{Kind: ErrInvalidArgument, Message: msg, Violations: violations}
}

func newf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

var kindCodes = []struct {
	kind error
	code codes.Code
}{
	{ErrNotFound, codes.NotFound},
	{ErrAlreadyExists, codes.AlreadyExists},
	{ErrInvalidArgument, codes.InvalidArgument},
	{ErrFailedPrecondition, codes.FailedPrecondition},
	{ErrUnauthenticated, codes.Unauthenticated},
	{ErrPermissionDenied, codes.PermissionDenied},
	{ErrResourceExhausted, codes.ResourceExhausted},
	{ErrUnavailable, codes.Unavailable},
	{ErrUnimplemented, codes.Unimplemented},
	{ErrAborted, codes.Aborted},
}

// Client-facing texts of the database's faults.
const (
	msgUnavailable = "the database is unavailable; retry shortly"
	msgConflict    = "the transaction was aborted by a conflicting one; retry"
)

// ToStatus maps err to the status a client receives. The second result is
// true when the client sees a generic text only (INTERNAL "internal error",
// or the UNAVAILABLE or ABORTED of a database fault): the caller must log
// err, at error level for INTERNAL.
func ToStatus(err error) (*status.Status, bool) {
	if err == nil {
		return status.New(codes.OK, ""), false
	}
	// A status built deliberately by a handler (or returned by a gRPC client
	// call to another service) passes through unchanged.
	if s, ok := status.FromError(err); ok {
		return s, s.Code() == codes.Internal || s.Code() == codes.Unknown
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.New(codes.Canceled, "request canceled"), false
	case errors.Is(err, context.DeadlineExceeded):
		return status.New(codes.DeadlineExceeded, "deadline exceeded"), false
	}
	var e *Error
	if errors.As(err, &e) {
		for _, kc := range kindCodes {
			if errors.Is(e.Kind, kc.kind) {
				return withViolations(status.New(kc.code, e.Message), e.Violations), false
			}
		}
	}
	for _, kc := range kindCodes {
		if errors.Is(err, kc.kind) {
			return status.New(kc.code, kc.kind.Error()), false
		}
	}
	switch {
	case IsConflict(err):
		return status.New(codes.Aborted, msgConflict), true
	case IsTransient(err):
		return status.New(codes.Unavailable, msgUnavailable), true
	}
	return status.New(codes.Internal, "internal error"), true
}

func withViolations(s *status.Status, vs []FieldViolation) *status.Status {
	if len(vs) == 0 {
		return s
	}
	br := &errdetails.BadRequest{}
	for _, v := range vs {
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{
			Field: v.Field, Description: v.Description,
		})
	}
	if d, err := s.WithDetails(br); err == nil {
		return d
	}
	return s
}

// Reply is a handler's answer: r when err is nil, else no response and err.
// It lets a handler end with one line however its last call went.
func Reply[R any](r R, err error) (R, error) {
	if err != nil {
		var none R
		return none, err
	}
	return r, nil
}
