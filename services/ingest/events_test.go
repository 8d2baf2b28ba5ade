//go:build integration

package ingest_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/services/ingest"
)

func asHuman(t *testing.T, human uuid.UUID, agent *uuid.UUID) context.Context {
	t.Helper()
	return auth.NewContext(t.Context(), auth.Principal{
		CredentialID: uuid.New(), HumanID: human, AgentID: agent, Scopes: []auth.Scope{auth.ScopePublisher, auth.ScopeRead},
	})
}

func code(err error) codes.Code {
	st, _ := apierr.ToStatus(err)
	return st.Code()
}

func TestPublishEventStoresEventAndTodoOnceAndReadsBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := ingest.New(zap.NewNop(), e.pool, ingest.Options{SealingKeys: e.keys})
	var agent uuid.UUID
	require.NoError(t, e.pool.QueryRow(t.Context(),
		`INSERT INTO agents (human_id, name) VALUES ($1, 'builder') RETURNING id`, e.human).Scan(&agent))
	ctx := asHuman(t, e.human, &agent)
	req := &ingestv1.PublishEventRequest{
		Topic: "build.finished", Payload: []byte("\x00raw\xff"), ContentType: "application/octet-stream",
		Headers: map[string]string{"X-Build": "42"}, DeliveryId: "b-42", Queue: "builds", AgentId: agent.String(),
	}
	res, err := srv.PublishEvent(ctx, req)
	require.NoError(t, err)
	require.False(t, res.GetDuplicate())
	require.Positive(t, res.GetTodoId())
	ev := res.GetEvent()
	require.Equal(t, "publish", ev.GetSource())
	require.Equal(t, agent.String(), ev.GetPublishedBy())
	require.Equal(t, []byte("\x00raw\xff"), ev.GetPayload())
	require.Equal(t, map[string]string{"x-build": "42"}, ev.GetHeaders())
	require.EqualValues(t, 5, ev.GetSizeBytes())
	var kind, payload string
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT kind, payload::text FROM todos WHERE id = $1 AND event_id = $2`,
		res.GetTodoId(), ev.GetId()).Scan(&kind, &payload))
	require.Equal(t, "build.finished", kind)
	require.Equal(t, "{}", payload)

	again, err := srv.PublishEvent(ctx, req)
	require.NoError(t, err)
	require.True(t, again.GetDuplicate())
	require.Zero(t, again.GetTodoId())
	require.Equal(t, ev.GetId(), again.GetEvent().GetId())
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1`))

	got, err := srv.GetEvent(ctx, &ingestv1.GetEventRequest{Id: ev.GetId()})
	require.NoError(t, err)
	require.Equal(t, ev.GetPayload(), got.GetEvent().GetPayload())

	// Another tenant sees nothing of it, and cannot address this agent.
	var other uuid.UUID
	require.NoError(t, e.pool.QueryRow(t.Context(), `INSERT INTO humans (email) VALUES ('other@example.test') RETURNING id`).Scan(&other))
	_, err = srv.GetEvent(asHuman(t, other, nil), &ingestv1.GetEventRequest{Id: ev.GetId()})
	require.Equal(t, codes.NotFound, code(err))
	_, err = srv.PublishEvent(asHuman(t, other, nil), &ingestv1.PublishEventRequest{Topic: "x", Queue: "q", AgentId: agent.String()})
	require.Equal(t, codes.NotFound, code(err))
	list, err := srv.ListEvents(asHuman(t, other, nil), &ingestv1.ListEventsRequest{})
	require.NoError(t, err)
	require.Empty(t, list.GetEvents())
}

func TestListEventsPagesAndFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := ingest.New(zap.NewNop(), e.pool, ingest.Options{SealingKeys: e.keys})
	ctx := asHuman(t, e.human, nil)
	var ids []int64
	for i := range 7 {
		topic := "a"
		if i%2 == 1 {
			topic = "b"
		}
		res, err := srv.PublishEvent(ctx, &ingestv1.PublishEventRequest{Topic: topic, Payload: []byte{byte(i)}})
		require.NoError(t, err)
		ids = append(ids, res.GetEvent().GetId())
	}

	var seen []int64
	tok := ""
	for {
		page, err := srv.ListEvents(ctx, &ingestv1.ListEventsRequest{PageSize: 3, PageToken: tok})
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.GetEvents()), 3)
		for _, ev := range page.GetEvents() {
			seen = append(seen, ev.GetId())
			require.Empty(t, ev.GetPayload(), "payload only when asked for")
			require.EqualValues(t, 1, ev.GetSizeBytes())
		}
		if tok = page.GetNextPageToken(); tok == "" {
			break
		}
	}
	require.Equal(t, []int64{ids[6], ids[5], ids[4], ids[3], ids[2], ids[1], ids[0]}, seen, "newest first, each once")

	b, err := srv.ListEvents(ctx, &ingestv1.ListEventsRequest{Topic: "b", IncludePayload: true})
	require.NoError(t, err)
	require.Len(t, b.GetEvents(), 3)
	require.Equal(t, []byte{5}, b.GetEvents()[0].GetPayload())

	// todo_state: only the events whose todo is in that state.
	withTodo, err := srv.PublishEvent(ctx, &ingestv1.PublishEventRequest{Topic: "c", Queue: "jobs"})
	require.NoError(t, err)
	pending, err := srv.ListEvents(ctx, &ingestv1.ListEventsRequest{TodoState: queuev1.TodoState_TODO_STATE_PENDING})
	require.NoError(t, err)
	require.Len(t, pending.GetEvents(), 1)
	require.Equal(t, withTodo.GetEvent().GetId(), pending.GetEvents()[0].GetId())
	dead, err := srv.ListEvents(ctx, &ingestv1.ListEventsRequest{TodoState: queuev1.TodoState_TODO_STATE_DEAD})
	require.NoError(t, err)
	require.Empty(t, dead.GetEvents())

	_, err = srv.ListEvents(ctx, &ingestv1.ListEventsRequest{PageToken: "not-a-token"})
	require.Equal(t, codes.InvalidArgument, code(err))
	_, err = srv.ListEvents(ctx, &ingestv1.ListEventsRequest{PageSize: 1001})
	require.Equal(t, codes.InvalidArgument, code(err))
}
