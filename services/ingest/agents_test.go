//go:build integration

package ingest_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/services/ingest"
	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
)

// asAgent is a credential minted for agent, with the agent scope only (what
// a worker holds) or with publisher too.
func asAgent(t *testing.T, human, agent uuid.UUID, scopes ...auth.Scope) context.Context {
	t.Helper()
	return auth.NewContext(t.Context(), auth.Principal{
		CredentialID: uuid.New(), HumanID: human, AgentID: &agent, Scopes: append([]auth.Scope{auth.ScopeAgent}, scopes...),
	})
}

// listIDs is every event id ctx's ListEvents returns, over all its pages.
func listIDs(t *testing.T, srv *ingest.Server, ctx context.Context) []int64 {
	t.Helper()
	var ids []int64
	tok := ""
	for {
		page, err := srv.ListEvents(ctx, &ingestv1.ListEventsRequest{PageSize: 2, PageToken: tok})
		require.NoError(t, err)
		for _, ev := range page.GetEvents() {
			ids = append(ids, ev.GetId())
		}
		if tok = page.GetNextPageToken(); tok == "" {
			break
		}
	}
	slices.Sort(ids)
	return ids
}

// TestAgentsReadOnlyTheirOwnEvents: two agents of one tenant, each with its
// own endpoint, pull adapter and published event. Each agent's credential
// lists and gets only its own events (and the tenant's shared ones); the
// other agent's are NOT_FOUND, exactly like a missing id. The tenant's read
// credential sees all of them.
func TestAgentsReadOnlyTheirOwnEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := ingest.New(zap.NewNop(), e.pool, ingest.Options{SealingKeys: e.keys, Todos: e.queue.Todos()})
	agents := map[string]uuid.UUID{}
	for _, name := range []string{"a", "b"} {
		var id uuid.UUID
		require.NoError(t, e.pool.QueryRow(t.Context(),
			`INSERT INTO agents (human_id, name) VALUES ($1, $2) RETURNING id`, e.human, name).Scan(&id))
		agents[name] = id
	}
	own := map[string][]int64{}

	// A webhook to each agent's endpoint, and one to the tenant's shared
	// endpoint (no agent: any agent may claim its todo, so read its event).
	hook := func(extra string, body string) int64 {
		slug := e.endpoint(t, "none", nil, extra)
		code, resp := e.post(t, slug, []byte(body), nil)
		require.Equal(t, http.StatusOK, code, resp)
		var id int64
		require.NoError(t, e.pool.QueryRow(t.Context(),
			`SELECT max(id) FROM events WHERE human_id = $1 AND payload = $2`, e.human, []byte(body)).Scan(&id))
		return id
	}
	for name, id := range agents {
		own[name] = append(own[name], hook("agent_id = '"+id.String()+"'", `{"to":"`+name+`"}`))
	}
	shared := []int64{hook("", `{"to":"anyone"}`)}

	// A message from each agent's pull adapter.
	for name, id := range agents {
		var adapterID uuid.UUID
		require.NoError(t, e.pool.QueryRow(t.Context(),
			`INSERT INTO adapters (human_id, name, kind, queue, agent_id) VALUES ($1, $2, 'redis_stream', 'orders', $3) RETURNING id`,
			e.human, "orders-"+name, id).Scan(&adapterID))
		sink := srv.AdapterSink(ingest.AdapterTarget{ID: adapterID, HumanID: e.human, Queue: "orders", AgentID: &id})
		require.NoError(t, sink.Store(t.Context(), adapterID.String(), []adapter.Message{{SourceID: "1-0", Body: []byte(name)}}))
		var ev int64
		require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT id FROM events WHERE adapter_id = $1`, adapterID).Scan(&ev))
		own[name] = append(own[name], ev)
	}

	// Each agent publishes an event of its own (no todo), and a then hands
	// b a todo: that event is b's, and a still reads what it published.
	for name, id := range agents {
		res, err := srv.PublishEvent(asAgent(t, e.human, id, auth.ScopePublisher),
			&ingestv1.PublishEventRequest{Topic: "note", DeliveryId: "note-" + name, Payload: []byte(name)})
		require.NoError(t, err)
		require.Equal(t, id.String(), res.GetEvent().GetAgentId())
		own[name] = append(own[name], res.GetEvent().GetId())
	}
	handoff, err := srv.PublishEvent(asAgent(t, e.human, agents["a"], auth.ScopePublisher),
		&ingestv1.PublishEventRequest{Topic: "handoff", Queue: "work", AgentId: agents["b"].String()})
	require.NoError(t, err)
	own["a"] = append(own["a"], handoff.GetEvent().GetId())
	own["b"] = append(own["b"], handoff.GetEvent().GetId())
	// An unaddressed publish into a queue is shared work like the shared
	// endpoint's: b may claim its todo, and the todo is only a reference.
	pooled, err := srv.PublishEvent(asAgent(t, e.human, agents["a"], auth.ScopePublisher),
		&ingestv1.PublishEventRequest{Topic: "pooled", Queue: "work"})
	require.NoError(t, err)
	require.Empty(t, pooled.GetEvent().GetAgentId())
	shared = append(shared, pooled.GetEvent().GetId())

	all := slices.Clone(shared)
	for name := range own {
		own[name] = append(own[name], shared...)
		slices.Sort(own[name])
		all = append(all, own[name]...)
	}
	slices.Sort(all)
	all = slices.Compact(all)

	for name, id := range agents {
		ctx := asAgent(t, e.human, id)
		require.Equal(t, own[name], listIDs(t, srv, ctx), "agent %s lists only its own and the shared events", name)
		for _, ev := range all {
			got, err := srv.GetEvent(ctx, &ingestv1.GetEventRequest{Id: ev})
			if slices.Contains(own[name], ev) {
				require.NoError(t, err, "agent %s reads its event %d", name, ev)
				require.Equal(t, ev, got.GetEvent().GetId())
				continue
			}
			require.Equal(t, codes.NotFound, code(err), "agent %s must not read event %d", name, ev)
			require.EqualError(t, err, "event "+strconv.FormatInt(ev, 10)+" not found", "the same answer as a missing event")
		}
	}
	for name, id := range agents {
		notes, err := srv.ListEvents(asAgent(t, e.human, id), &ingestv1.ListEventsRequest{Topic: "note", IncludePayload: true})
		require.NoError(t, err)
		require.Len(t, notes.GetEvents(), 1, "filters apply to an agent's listing too")
		require.Equal(t, []byte(name), notes.GetEvents()[0].GetPayload())
	}
	require.Equal(t, all, listIDs(t, srv, asHuman(t, e.human, nil)), "the tenant's read credential sees every event")

	// The publish dedup scope is the tenant's: b reusing a's delivery id is
	// told the id is taken and gets nothing of a's event.
	_, err = srv.PublishEvent(asAgent(t, e.human, agents["b"], auth.ScopePublisher),
		&ingestv1.PublishEventRequest{Topic: "note", DeliveryId: "note-a", Payload: []byte("b's")})
	require.Equal(t, codes.AlreadyExists, code(err))
	again, err := srv.PublishEvent(asAgent(t, e.human, agents["a"], auth.ScopePublisher),
		&ingestv1.PublishEventRequest{Topic: "note", DeliveryId: "note-a", Payload: []byte("a")})
	require.NoError(t, err, "a's own retry is still answered with its event")
	require.True(t, again.GetDuplicate())
	require.Equal(t, []byte("a"), again.GetEvent().GetPayload())
}
