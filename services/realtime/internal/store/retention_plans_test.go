//go:build integration

package store

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
)

// TestRetentionStatementsGenericPlans pins how retention reads
// realtime_events, on generic plans (what a pooled session settles on):
// every statement goes through the index its cost assumes, never a scan of
// the table nor a bitmap of a tenant's whole range, so a pass costs what it
// reads and deletes, not the size of the table. Asked for a tenant's oldest
// directly, the planner walks the primary key over every tenant's events
// (queries.sql says how each statement keeps to idx_realtime_events_tenant).
func TestRetentionStatementsGenericPlans(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.GenericPlanPool(t)
	s := New(pool)
	tenants := make([]uuid.UUID, 20)
	for i := range tenants {
		require.NoError(t, pool.QueryRow(ctx, `INSERT INTO humans (email) VALUES ($1) RETURNING id`, uuid.NewString()+"@example.test").Scan(&tenants[i]))
	}
	// 40,000 events of 20 tenants, published round robin, the oldest 1,000 a
	// day old.
	_, err := pool.Exec(ctx, `
		INSERT INTO realtime_events (human_id, channel, created_at)
		SELECT ($1::uuid[])[1 + g % 20], 'c', CASE WHEN g < 1000 THEN now() - interval '2 days' ELSE now() END
		FROM generate_series(0, 39999) AS g`, tenants)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE realtime_events`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE settings SET value = '{"max_age_seconds": 86400, "max_rows": 1000000, "max_rows_per_tenant": 1940}' WHERE key = 'retention.realtime_events'`)
	require.NoError(t, err)
	// The first pass takes the old ones, looks at every tenant and cuts each
	// to its cap; the second counts what was published since, then cuts the
	// one tenant over.
	p, err := s.PruneOnce(ctx, 100, 100)
	require.NoError(t, err)
	require.EqualValues(t, 1000, p.ByAge)
	require.EqualValues(t, 20*10, p.OverTenantCap)
	_, err = pool.Exec(ctx, `INSERT INTO realtime_events (human_id, channel) SELECT $1, 'c' FROM generate_series(1, 50)`, tenants[1])
	require.NoError(t, err)
	p, err = s.PruneOnce(ctx, 100, 100)
	require.NoError(t, err)
	require.EqualValues(t, 50, p.OverTenantCap)

	for _, c := range []struct {
		query   string
		indexes []string
	}{
		{"PruneByAge", []string{"realtime_events_pkey"}},
		{"MaxEventID", []string{"realtime_events_pkey"}},
		{"RetentionWritten", []string{"realtime_events_pkey"}},
		{"RetentionTenants", []string{"idx_realtime_events_tenant"}},
		{"RetentionWalk", []string{"idx_realtime_events_tenant"}},
		{"RetentionTrim", []string{"idx_realtime_events_tenant", "realtime_events_pkey"}},
		{"RetentionCount", []string{"idx_realtime_events_tenant"}},
	} {
		plan, raw := pgtest.GenericPlan(t, pool, c.query)
		indexes, err := plan.Indexes("realtime_events")
		if assert.NoError(t, err, "%s's generic plan:\n%s", c.query, raw) {
			assert.Equal(t, c.indexes, indexes, "%s's generic plan:\n%s", c.query, raw)
		}
	}
}
