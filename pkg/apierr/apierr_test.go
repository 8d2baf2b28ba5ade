package apierr_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard/switchboard/pkg/apierr"
)

func TestToStatus(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		err      error
		code     codes.Code
		msg      string
		internal bool
	}{
		{"not found", apierr.NotFound("todo %d not found", 7), codes.NotFound, "todo 7 not found", false},
		{"wrapped", fmt.Errorf("store: %w", apierr.FailedPrecondition("stale lease token")), codes.FailedPrecondition, "stale lease token", false},
		{"bare sentinel", fmt.Errorf("x: %w", apierr.ErrAlreadyExists), codes.AlreadyExists, "already exists", false},
		{"canceled", fmt.Errorf("query: %w", context.Canceled), codes.Canceled, "request canceled", false},
		{"deadline", context.DeadlineExceeded, codes.DeadlineExceeded, "deadline exceeded", false},
		{"status passes through", status.Error(codes.ResourceExhausted, "slow down"), codes.ResourceExhausted, "slow down", false},
		{"unknown is internal", errors.New(`ERROR: relation "todos" does not exist (SQLSTATE 42P01)`), codes.Internal, "internal error", true},
		{"unimplemented", apierr.Unimplemented("Claim arrives with the queue issue"), codes.Unimplemented, "Claim arrives with the queue issue", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, internal := apierr.ToStatus(tc.err)
			require.Equal(t, tc.code, st.Code())
			require.Equal(t, tc.msg, st.Message())
			require.Equal(t, tc.internal, internal)
		})
	}
}

func TestInvalidCarriesFieldViolations(t *testing.T) {
	t.Parallel()
	err := apierr.Invalid(
		apierr.FieldViolation{Field: "queue", Description: "must match ^[a-z0-9][a-z0-9._-]{0,62}$"},
		apierr.FieldViolation{Field: "max_attempts", Description: "must be between 1 and 1000"},
	)
	require.ErrorIs(t, err, apierr.ErrInvalidArgument)
	st, internal := apierr.ToStatus(err)
	require.False(t, internal)
	require.Equal(t, codes.InvalidArgument, st.Code())
	require.Equal(t, "invalid queue: must match ^[a-z0-9][a-z0-9._-]{0,62}$ (and 1 more)", st.Message())
	require.Len(t, st.Details(), 1)
	br, ok := st.Details()[0].(*errdetails.BadRequest)
	require.True(t, ok)
	require.Len(t, br.GetFieldViolations(), 2)
	require.Equal(t, "max_attempts", br.GetFieldViolations()[1].GetField())
}
