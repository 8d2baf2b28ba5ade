//go:build integration

package store

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
)

// TestListByEventUsesEventIndex: ListTodos' event_id filter reaches an
// event's todos through idx_todos_event_id even on a generic plan (the
// worst case: a plan made without seeing that the filter is set), never by
// walking the tenant's todos.
func TestListByEventUsesEventIndex(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.GenericPlanPool(t)
	s := New(pool, pool)
	var human uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO humans (email) VALUES ('list-plans@example.test') RETURNING id`).Scan(&human))
	_, err := pool.Exec(ctx, `INSERT INTO events (human_id, source, payload, size_bytes) SELECT $1, 'publish', '\x7b7d', 2 FROM generate_series(1, 2000)`, human)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO todos (human_id, queue, event_id)
		SELECT $1, 'q', (SELECT min(id) FROM events) + i % 2000 FROM generate_series(1, 20000) AS i`, human)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE todos`)
	require.NoError(t, err)

	var ev int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT min(id) FROM events`).Scan(&ev))
	rows, err := s.List(ctx, Caller{HumanID: human}, ListFilter{EventID: ev, Limit: 100})
	require.NoError(t, err)
	require.Len(t, rows, 10)
	for i := 1; i < len(rows); i++ {
		require.Less(t, rows[i].ID, rows[i-1].ID, "newest first")
	}

	plan, raw := genericPlan(t, pool, preparedStatements(t, pool), "TodoListByEvent")
	require.Contains(t, plan.indexes(), "idx_todos_event_id", "%s", raw)
	require.NoError(t, plan.check(), "%s", raw)
}

// indexes are the names of the indexes the plan reads.
func (n planNode) indexes() []string {
	var out []string
	if n.Index != "" {
		out = append(out, n.Index)
	}
	for _, c := range n.Plans {
		out = append(out, c.indexes()...)
	}
	return out
}
