//go:build integration

package store

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
)

// dedupeStatements are the statements an enqueue with dedupe scopes runs.
var dedupeStatements = []string{
	"TodoInsertBatch", "TodoGetByDedupeKeys", "TodoDedupeWindowsReserve", "TodoGetByDedupeWindows",
	"TodoDedupeWindowsTakeOver", "TodoDedupeWindowsLink",
}

// TestDedupeStatementsGenericPlans: the enqueue's dedupe statements keep
// index access under generic plans (which a pool may choose after five runs)
// on a queue of realistic size: the holder lookups go through todos_dedup
// (their predicate is its predicate) and the windows' primary key.
func TestDedupeStatementsGenericPlans(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.GenericPlanPool(t)
	s := New(pool, pool)
	var human uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO humans (email) VALUES ('dedupe-plans@example.test') RETURNING id`).Scan(&human))
	_, err := pool.Exec(ctx, `INSERT INTO todos (human_id, queue, dedupe_key, dedupe_scope)
		SELECT $1, 'q', 'k' || i, (ARRAY[NULL, 'live', 'window'])[i % 3 + 1] FROM generate_series(1, 20000) AS i`, human)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO todo_dedupe_windows (human_id, queue, key, todo_id, expires_at)
		SELECT human_id, queue, dedupe_key, id, now() + interval '1 hour' FROM todos WHERE dedupe_scope = 'window'`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE todos; ANALYZE todo_dedupe_windows`)
	require.NoError(t, err)

	c := Caller{HumanID: human}
	batch := []NewTodo{
		{DedupeKey: "k1", DedupeScope: ScopeLive, Payload: []byte(`{}`)}, {DedupeKey: "x", Payload: []byte(`{}`)},
		{DedupeKey: "k2", DedupeScope: ScopeWindow, DedupeWindow: time.Hour, Payload: []byte(`{}`)},
		{DedupeKey: "gone", DedupeScope: ScopeWindow, DedupeWindow: time.Hour, Payload: []byte(`{}`)},
	}
	_, err = pool.Exec(ctx, `INSERT INTO todo_dedupe_windows (human_id, queue, key, todo_id, expires_at)
		VALUES ($1, 'q', 'gone', -1, now() + interval '1 hour')`, human) // its todo is gone: taken over
	require.NoError(t, err)
	res, err := s.Enqueue(ctx, c, "q", batch)
	require.NoError(t, err)
	require.Equal(t, []bool{true, false, true, false}, []bool{res[0].Duplicate, res[1].Duplicate, res[2].Duplicate, res[3].Duplicate})

	byQuery := preparedStatements(t, pool)
	for _, q := range dedupeStatements {
		plan, raw := genericPlan(t, pool, byQuery, q)
		require.NoError(t, plan.check(), "%s's generic plan:\n%s", q, raw)
		for _, n := range plan.find("todo_dedupe_windows") {
			require.Contains(t, []string{"Index Scan", "Index Only Scan", "ModifyTable"}, n.NodeType, "%s:\n%s", q, raw)
		}
	}
}
