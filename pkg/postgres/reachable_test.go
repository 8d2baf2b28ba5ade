package postgres_test

import (
	"context"
	"net"
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

// TestWaitReachableReportsTheLastRealFailure: when the deadline cuts the
// final attempt short, the error still says what the database did before
// (here the server hung up on the first connection, then let the next one
// hang), not only "context deadline exceeded".
func TestWaitReachableReportsTheLastRealFailure(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0") //nolint:noctx // a fake server for this test
	require.NoError(t, err)
	t.Cleanup(func() { _ = lis.Close() })
	go func() {
		first := true
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			if first {
				first = false
				_ = c.Close() // a hang-up: the attempt fails at once
				continue
			}
			t.Cleanup(func() { _ = c.Close() }) // silence: the attempt waits for the deadline
		}
	}()
	pool, err := pgxpool.New(t.Context(), "postgres://postgres@"+lis.Addr().String()+"/none?sslmode=disable")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	err = postgres.WaitReachable(ctx, zap.NewNop(), pool)
	require.ErrorContains(t, err, "postgres not reachable")
	require.ErrorContains(t, err, "failed to receive message", "the hang-up, not only the deadline")
}
