//go:build integration

package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/pkg/postgres"
)

func emptyPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), pgtest.NewEmptyDatabase(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func TestSchemaCurrentOnlyAfterMigrate(t *testing.T) {
	t.Parallel()
	pool := emptyPool(t)
	err := postgres.SchemaCurrent(t.Context(), pool)
	require.ErrorIs(t, err, postgres.ErrSchemaMismatch)
	require.ErrorContains(t, err, "schema version 0")

	applied, err := postgres.Migrate(t.Context(), pool)
	require.NoError(t, err)
	require.Positive(t, applied)
	require.NoError(t, postgres.SchemaCurrent(t.Context(), pool))

	again, err := postgres.Migrate(t.Context(), pool)
	require.NoError(t, err)
	require.Zero(t, again, "migrating twice applies nothing the second time")
}

// Readiness reports NOT ready while the schema is behind and flips once it
// is current, which is what gRPC health follows.
func TestReadinessFollowsTheSchema(t *testing.T) {
	t.Parallel()
	pool := emptyPool(t)
	var (
		mu  sync.Mutex
		got []bool
	)
	var r *postgres.Readiness
	r = postgres.NewReadiness(zap.NewNop(), pool, 20*time.Millisecond, func() {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.Ready())
	})
	require.NoError(t, r.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, r.Stop(context.WithoutCancel(t.Context()))) }) // t.Context() is done by cleanup time
	require.False(t, r.Ready())
	checked, reachable, current := r.State()
	require.True(t, checked)
	require.True(t, reachable, "the database answers")
	require.False(t, current, "but its schema is behind")

	_, err := postgres.Migrate(t.Context(), pool)
	require.NoError(t, err)
	require.Eventually(t, r.Ready, time.Minute, 10*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []bool{false, true}, got, "one report per change")
}
