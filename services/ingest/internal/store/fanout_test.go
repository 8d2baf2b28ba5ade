//go:build integration

package store_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/ingest/internal/store"
	"github.com/switchboard/switchboard/services/queue"
)

// TestIngestFansOut: one batch stores its events (a topic set by
// the caller kept on the event and its todos' payload) with a todo per
// event in every target, returned per event in (queue, agent) order
// whatever order the targets came in; a duplicate in the batch, or a later
// redelivery, gets none; no target stores events without todos.
func TestIngestFansOut(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewPool(t)
	var human, endpoint, agent uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO humans (email) VALUES ('fanout@example.test') RETURNING id`).Scan(&human))
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO agents (human_id, name) VALUES ($1, 'a') RETURNING id`, human).Scan(&agent))
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO endpoints (human_id, slug, queue, verification)
		VALUES ($1, 'fanout-endpoint-0001', 'unused', 'none') RETURNING id`, human).Scan(&endpoint))
	st := store.New(pool, nil, queue.NewTodos(pool, nil, queue.TodosOptions{}))
	event := func(id string) store.Event {
		return store.Event{HumanID: human, Source: "endpoint:" + endpoint.String(), EndpointID: &endpoint, DeliveryID: id, Topic: "github.push", Payload: []byte(`{}`)}
	}
	targets := []store.Target{
		{Queue: "zeta", Kind: "webhook"}, {Queue: "alpha", AgentID: &agent, Kind: "webhook"}, {Queue: "alpha", Kind: "webhook"},
	}
	res, err := st.Ingest(ctx, []store.Event{event("e1"), event("e2"), event("e1")}, targets...)
	require.NoError(t, err)
	require.True(t, res[2].Duplicate)
	require.Empty(t, res[2].Todos)
	for _, r := range res[:2] {
		require.False(t, r.Duplicate)
		require.Len(t, r.Todos, 3)
		require.Equal(t, []string{"alpha", "alpha", "zeta"}, []string{r.Todos[0].Queue, r.Todos[1].Queue, r.Todos[2].Queue})
		require.Nil(t, r.Todos[0].Todo.AgentID, "unaddressed first")
		require.Equal(t, &agent, r.Todos[1].Todo.AgentID)
		require.Equal(t, r.TodoID(), r.Todos[0].Todo.ID)
		for _, td := range r.Todos {
			require.Equal(t, r.EventID, td.Todo.EventID)
		}
	}
	var topics int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM todos t JOIN events e ON e.id = t.event_id
		WHERE e.topic = 'github.push' AND t.payload ->> 'topic' = 'github.push'`).Scan(&topics))
	require.Equal(t, 6, topics)

	res, err = st.Ingest(ctx, []store.Event{event("e2")}, targets...)
	require.NoError(t, err)
	require.True(t, res[0].Duplicate)
	res, err = st.Ingest(ctx, []store.Event{event("e3")})
	require.NoError(t, err)
	require.NotZero(t, res[0].EventID)
	require.Empty(t, res[0].Todos)
	var todos int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM todos`).Scan(&todos))
	require.Equal(t, 6, todos)
}
