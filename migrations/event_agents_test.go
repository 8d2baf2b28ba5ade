//go:build integration

package migrations_test

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/migrations"
)

// TestEventAgentsBackfill: 00014 gives every stored event the agent it is
// for from what is still known: its todo's addressee first (an unaddressed
// todo makes it shared, whatever its endpoint says now), else its endpoint's
// or adapter's agent, else its publisher. Down removes the column again.
func TestEventAgentsBackfill(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := open(t, newDatabase(t))
	require.NoError(t, migrations.UpTo(ctx, db, 12))
	human := insertHuman(t, db)
	insert := func(q string, args ...any) string {
		t.Helper()
		var id string
		require.NoError(t, db.QueryRowContext(ctx, q+" RETURNING id::text", args...).Scan(&id))
		return id
	}
	a := insert(`INSERT INTO agents (human_id, name) VALUES ($1, 'a')`, human)
	b := insert(`INSERT INTO agents (human_id, name) VALUES ($1, 'b')`, human)
	endpointA := insert(`INSERT INTO endpoints (human_id, slug, queue, verification, agent_id) VALUES ($1, 'aaaaaaaaaaaaaaaa', 'q', 'none', $2)`, human, a)
	adapterB := insert(`INSERT INTO adapters (human_id, name, kind, queue, agent_id) VALUES ($1, 'b', 'redis_stream', 'q', $2)`, human, b)
	event := func(source string, endpoint, adapter, publishedBy any) string {
		return insert(`INSERT INTO events (human_id, source, endpoint_id, adapter_id, published_by, payload) VALUES ($1, $2, $3, $4, $5, '')`,
			human, source, endpoint, adapter, publishedBy)
	}
	todo := func(eventID string, agent any) {
		_ = insert(`INSERT INTO todos (human_id, queue, event_id, agent_id) VALUES ($1, 'q', $2, $3)`, human, eventID, agent)
	}
	hookWithTodo := event("endpoint:"+endpointA, endpointA, nil, nil)
	todo(hookWithTodo, a)
	hookPruned := event("endpoint:"+endpointA, endpointA, nil, nil) // its todo went to retention
	hookReassigned := event("endpoint:"+endpointA, endpointA, nil, nil)
	todo(hookReassigned, nil) // the endpoint had no agent then
	pulled := event("adapter:"+adapterB, nil, adapterB, nil)
	handoff := event("publish", nil, nil, a)
	todo(handoff, b)
	note := event("publish", nil, nil, b)
	pooled := event("publish", nil, nil, a)
	todo(pooled, nil)
	human2 := event("publish", nil, nil, nil)

	require.NoError(t, migrations.UpTo(ctx, db, 14))
	want := map[string]sql.NullString{
		hookWithTodo: {String: a, Valid: true}, hookPruned: {String: a, Valid: true}, hookReassigned: {},
		pulled: {String: b, Valid: true}, handoff: {String: b, Valid: true}, note: {String: b, Valid: true},
		pooled: {}, human2: {},
	}
	for id, agent := range want {
		var got sql.NullString
		require.NoError(t, db.QueryRowContext(ctx, `SELECT agent_id::text FROM events WHERE id = $1`, id).Scan(&got))
		require.Equal(t, agent, got, "event %s", id)
	}

	_, err := migrations.DownTo(ctx, db, 12)
	require.NoError(t, err)
	var n int
	require.NoError(t, db.QueryRowContext(ctx,
		`SELECT count(*) FROM information_schema.columns WHERE table_name = 'events' AND column_name = 'agent_id'`).Scan(&n))
	require.Zero(t, n)
}
