//go:build integration

package store

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/queue"
)

// TestIngestBatchKindFromTopic: one statement stores events of several
// topics, and with KindFromTopic each todo's kind is its event's topic
// (the target's Kind where the topic is empty); without it, every todo
// takes the target's Kind.
func TestIngestBatchKindFromTopic(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewPool(t)
	s := New(pool, nil, queue.NewTodos(pool, nil, queue.TodosOptions{}))
	var human uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO humans (email) VALUES ('kinds@example.test') RETURNING id`).Scan(&human))
	events := func(source string) []Event {
		var out []Event
		for _, topic := range []string{"push", "", "issues"} {
			out = append(out, Event{HumanID: human, Source: source, Topic: topic, Payload: []byte(`{}`)})
		}
		return out
	}
	stored, err := s.Ingest(ctx, events("endpoint:a"), Target{Queue: "q", Kind: "webhook", KindFromTopic: true})
	require.NoError(t, err)
	stored2, err := s.Ingest(ctx, events("endpoint:b"), Target{Queue: "q", Kind: "fixed"})
	require.NoError(t, err)
	kind := func(id int64) string {
		var k string
		require.NoError(t, pool.QueryRow(ctx, `SELECT kind FROM todos WHERE id = $1`, id).Scan(&k))
		return k
	}
	require.Equal(t, []string{"push", "webhook", "issues"}, []string{kind(stored[0].TodoID()), kind(stored[1].TodoID()), kind(stored[2].TodoID())})
	require.Equal(t, []string{"fixed", "fixed", "fixed"}, []string{kind(stored2[0].TodoID()), kind(stored2[1].TodoID()), kind(stored2[2].TodoID())})
}
