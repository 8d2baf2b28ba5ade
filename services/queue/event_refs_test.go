//go:build integration

package queue_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
)

// seedAgentEvent stores an event of human addressed to agent and published
// by publisher (either nil), as ingest would.
func (e *env) seedAgentEvent(t *testing.T, human uuid.UUID, agent, publisher *uuid.UUID) int64 {
	t.Helper()
	var id int64
	require.NoError(t, e.pool.QueryRow(t.Context(),
		`INSERT INTO events (human_id, source, payload, size_bytes, agent_id, published_by) VALUES ($1, 'publish', '\x7b7d', 2, $2, $3) RETURNING id`,
		human, agent, publisher).Scan(&id))
	return id
}

// TestEnqueueEventIsOneTheCallerMayRead: an agent's credential may enqueue
// a todo about an event GetEvent would show it (addressed to it, published
// by it, or the tenant's shared one), and gets NOT_FOUND for another
// agent's event in exactly the answer a missing id gets, so it cannot even
// learn that the id exists; the batch that names one writes nothing. The
// tenant's own credential and the addressed agent reach the same event.
func TestEnqueueEventIsOneTheCallerMayRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := seedAgent(t, e.pool, e.human, "other")
	addressed := e.seedAgentEvent(t, e.human, &e.agent, nil)
	publishedForOther := e.seedAgentEvent(t, e.human, &other, &e.agent)
	shared := e.seedAgentEvent(t, e.human, nil, nil)
	theirs := e.seedAgentEvent(t, e.human, &other, &other)
	otherTenant := e.seedAgentEvent(t, seedHuman(t, e.pool), nil, nil)
	missing := theirs + 1000

	for name, event := range map[string]int64{"addressed to it": addressed, "published by it": publishedForOther, "shared": shared} {
		res, err := e.srv.Enqueue(e.worker(t), &queuev1.EnqueueRequest{Queue: "refs", EventId: event})
		require.NoError(t, err, name)
		require.Equal(t, event, res.GetTodo().GetEventId(), name)
	}

	before := e.snapshot(t)
	statusOf := func(event int64) proto.Message {
		t.Helper()
		_, err := e.srv.Enqueue(e.worker(t), &queuev1.EnqueueRequest{Queue: "refs", EventId: event})
		require.Equal(t, codes.NotFound, code(err), "event %d", event)
		st, _ := apierr.ToStatus(err)
		return st.Proto()
	}
	want := statusOf(missing)
	require.True(t, proto.Equal(want, statusOf(theirs)), "another agent's event answers as a missing one")
	require.True(t, proto.Equal(want, statusOf(otherTenant)), "another tenant's event answers as a missing one")
	_, err := e.srv.EnqueueBatch(e.worker(t), &queuev1.EnqueueBatchRequest{Queue: "refs", Requests: []*queuev1.EnqueueRequest{
		{EventId: shared}, {EventId: theirs},
	}})
	require.Equal(t, codes.NotFound, code(err))
	require.Contains(t, err.Error(), "request 1")
	require.Equal(t, before, e.snapshot(t), "a refused enqueue writes nothing")

	// Whoever may read it may enqueue about it.
	_, err = e.srv.Enqueue(asAgent(t, e.human, other), &queuev1.EnqueueRequest{Queue: "refs", EventId: theirs})
	require.NoError(t, err, "the agent it is addressed to")
	_, err = e.srv.Enqueue(e.owner(t), &queuev1.EnqueueRequest{Queue: "refs", EventId: theirs})
	require.NoError(t, err, "the tenant's own credential acts for no agent")
}
