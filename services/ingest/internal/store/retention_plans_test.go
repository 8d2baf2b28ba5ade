//go:build integration

package store

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
)

// TestRetentionStatementsGenericPlans pins how retention reads events, on
// generic plans (what a pooled session settles on): every statement goes
// through the index its cost assumes, never a scan of the table nor a bitmap
// of a tenant's whole range, so a pass costs what it reads and deletes, not
// the size of the table. Asked for a tenant's oldest directly, the planner
// walks the primary key over every tenant's events (queries.sql says how
// each statement keeps to idx_events_human_id).
func TestRetentionStatementsGenericPlans(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.GenericPlanPool(t)
	s := New(pool, nil, nil)
	tenants := make([]uuid.UUID, 20)
	for i := range tenants {
		require.NoError(t, pool.QueryRow(ctx, `INSERT INTO humans (email) VALUES ($1) RETURNING id`, uuid.NewString()+"@example.test").Scan(&tenants[i]))
	}
	// 40,000 events of 20 tenants, stored round robin, the oldest 1,000 a
	// year old.
	_, err := pool.Exec(ctx, `
		INSERT INTO events (human_id, source, payload, size_bytes, received_at)
		SELECT ($1::uuid[])[1 + g % 20], 'publish', ''::bytea, 0,
		       CASE WHEN g < 1000 THEN now() - interval '365 days' ELSE now() END
		FROM generate_series(0, 39999) AS g`, tenants)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE events`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE settings SET value = '{"max_age_seconds": 2592000, "max_rows": 1000000, "max_rows_per_tenant": 1940}' WHERE key = 'retention.events'`)
	require.NoError(t, err)
	// The first pass takes the old ones, looks at every tenant and cuts each
	// to its cap; the second counts what arrived since, then cuts the one
	// tenant over.
	p, err := s.PruneOnce(ctx, 100, 100)
	require.NoError(t, err)
	require.EqualValues(t, 1000, p.ByAge)
	require.EqualValues(t, 20*10, p.OverTenantCap)
	_, err = pool.Exec(ctx, `INSERT INTO events (human_id, source, payload, size_bytes)
		SELECT $1, 'publish', ''::bytea, 0 FROM generate_series(1, 50)`, tenants[1])
	require.NoError(t, err)
	p, err = s.PruneOnce(ctx, 100, 100)
	require.NoError(t, err)
	require.EqualValues(t, 50, p.OverTenantCap)

	for _, c := range []struct {
		query   string
		indexes []string
	}{
		{"EventPruneByAge", []string{"events_pkey", "idx_events_received_at"}},
		{"EventMaxID", []string{"events_pkey"}},
		{"EventRetentionWritten", []string{"events_pkey"}},
		{"EventRetentionWalk", []string{"idx_events_human_id"}},
		{"EventRetentionTrim", []string{"events_pkey", "idx_events_human_id"}},
		{"EventRetentionCount", []string{"idx_events_human_id"}},
	} {
		plan, raw := pgtest.GenericPlan(t, pool, c.query)
		indexes, err := plan.Indexes("events")
		if assert.NoError(t, err, "%s's generic plan:\n%s", c.query, raw) {
			assert.Equal(t, c.indexes, indexes, "%s's generic plan:\n%s", c.query, raw)
		}
	}
	// Any index led by human_id serves the loose scan of the tenants.
	plan, raw := pgtest.GenericPlan(t, pool, "EventRetentionTenants")
	_, err = plan.Indexes("events")
	require.NoError(t, err, "the generic plan:\n%s", raw)
}
