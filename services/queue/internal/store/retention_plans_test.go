//go:build integration

package store

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
)

// TestRetentionStatementsGenericPlans pins how retention reads todos, on
// generic plans (what a pooled session settles on): every statement goes
// through the index its cost assumes, never a scan of the table nor a bitmap
// of a tenant's whole range, so a pass costs what it reads and deletes, not
// the size of the table. Asked for a tenant's oldest directly, the planner
// walks idx_todos_finished_at over every tenant's finished todos (todos_retention.sql
// says how each statement keeps to idx_todos_finished_tenant).
func TestRetentionStatementsGenericPlans(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.GenericPlanPool(t)
	s := New(pool, nil)
	tenants := make([]uuid.UUID, 20)
	for i := range tenants {
		require.NoError(t, pool.QueryRow(ctx, `INSERT INTO humans (email) VALUES ($1) RETURNING id`, uuid.NewString()+"@example.test").Scan(&tenants[i]))
	}
	// 40,000 finished todos of 20 tenants, finished round robin (so their
	// finish times follow the heap: the planner's favourite case for
	// idx_todos_finished_at), and live work.
	_, err := pool.Exec(ctx, `
		INSERT INTO todos (human_id, queue, state, attempt, finished_at)
		SELECT ($1::uuid[])[1 + g % 20], 'q', 'completed', 1, now() - interval '1 hour' + g * interval '10 ms'
		FROM generate_series(0, 39999) AS g`, tenants)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO todos (human_id, queue) SELECT $1, 'q' FROM generate_series(1, 20000)`, tenants[0])
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE todos`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE settings SET value = '{"max_age_seconds": 604800, "max_rows": 1000000, "max_rows_per_tenant": 1990}' WHERE key = 'retention.todos'`)
	require.NoError(t, err)
	// The first pass looks at every tenant and cuts each to its cap; the
	// second counts what finished since, then cuts the one tenant over.
	p, err := s.PruneOnce(ctx, 100, 100)
	require.NoError(t, err)
	require.EqualValues(t, 20*10, p.OverTenantCap)
	_, err = pool.Exec(ctx, `INSERT INTO todos (human_id, queue, state, attempt, finished_at)
		SELECT $1, 'q', 'completed', 1, now() FROM generate_series(1, 50)`, tenants[1])
	require.NoError(t, err)
	p, err = s.PruneOnce(ctx, 100, 100)
	require.NoError(t, err)
	require.EqualValues(t, 50, p.OverTenantCap)

	for _, c := range []struct {
		query   string
		indexes []string
	}{
		{"TodoPruneByAge", []string{"idx_todos_finished_at", "todos_pkey"}},
		{"TodoFinishedNewest", []string{"idx_todos_finished_at"}},
		{"TodoRetentionWritten", []string{"idx_todos_finished_at"}},
		{"TodoRetentionTenants", []string{"idx_todos_finished_tenant"}},
		{"TodoRetentionCountNewest", []string{"idx_todos_finished_tenant"}},
		{"TodoRetentionCutoff", []string{"idx_todos_finished_tenant"}},
		{"TodoRetentionTrim", []string{"idx_todos_finished_tenant", "todos_pkey"}},
		{"TodoRetentionCount", []string{"idx_todos_finished_tenant"}},
	} {
		plan, raw := pgtest.GenericPlan(t, pool, c.query)
		indexes, err := plan.Indexes("todos")
		if assert.NoError(t, err, "%s's generic plan:\n%s", c.query, raw) {
			assert.Equal(t, c.indexes, indexes, "%s's generic plan:\n%s", c.query, raw)
		}
	}
}
