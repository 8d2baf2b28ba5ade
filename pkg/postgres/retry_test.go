package postgres_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/postgres"
)

func TestRetryConflicts(t *testing.T) {
	t.Parallel()
	deadlock := fmt.Errorf("insert: %w", &pgconn.PgError{Code: "40P01"})
	calls := 0
	err := postgres.RetryConflicts(t.Context(), func() error {
		if calls++; calls < 3 {
			return deadlock
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 3, calls, "retried until it went through")

	calls = 0
	err = postgres.RetryConflicts(t.Context(), func() error { calls++; return deadlock })
	require.ErrorIs(t, err, deadlock)
	require.Equal(t, 5, calls, "bounded")

	calls = 0
	other := errors.New("syntax")
	err = postgres.RetryConflicts(t.Context(), func() error { calls++; return other })
	require.ErrorIs(t, err, other)
	require.Equal(t, 1, calls, "only conflicts are retried")

	n, err := postgres.RetryConflicts1(t.Context(), func() (int, error) { return 7, nil })
	require.NoError(t, err)
	require.Equal(t, 7, n)
}
