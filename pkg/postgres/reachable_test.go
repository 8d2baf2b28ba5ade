package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/postgres"
)

// A closed port, not a server: this test needs no Postgres.
func TestWaitReachableGivesUpWhenContextEnds(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(t.Context(), "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=1")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	require.ErrorContains(t, postgres.WaitReachable(ctx, zap.NewNop(), pool), "postgres not reachable")
}
