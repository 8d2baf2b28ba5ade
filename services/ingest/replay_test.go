//go:build integration

package ingest_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/services/ingest"
)

// replayEnv is an env with the ingest service whose RPCs the tests call.
type replayEnv struct {
	*env
	srv *ingest.Server
}

func newReplayEnv(t *testing.T) replayEnv {
	t.Helper()
	return replayOn(t, newEnv(t))
}

func replayOn(t *testing.T, e *env) replayEnv {
	t.Helper()
	return replayEnv{env: e, srv: ingest.New(zap.NewNop(), e.pool, ingest.Options{SealingKeys: e.keys, Todos: e.queue.Todos()})}
}

// neighbour is another tenant in e's database.
func (e replayEnv) neighbour(t *testing.T) replayEnv {
	t.Helper()
	return replayOn(t, newEnvOn(t, e.pool, e.keys))
}

// hook delivers body to a new endpoint of queue 'hooks' (extra: more SET
// clauses for it) and returns the event's id and the endpoint's.
func (e replayEnv) hook(t *testing.T, extra, body string) (int64, uuid.UUID) {
	t.Helper()
	slug := e.endpoint(t, "none", nil, extra)
	code, resp := e.post(t, slug, []byte(body), nil)
	require.Equal(t, http.StatusOK, code, resp)
	var id int64
	var endpoint uuid.UUID
	require.NoError(t, e.pool.QueryRow(t.Context(),
		`SELECT e.id, e.endpoint_id FROM events AS e JOIN endpoints AS p ON p.id = e.endpoint_id WHERE p.slug = $1`, slug).Scan(&id, &endpoint))
	return id, endpoint
}

// prune marks an event's payload as pruned, as a payload-only retention
// would leave it.
func (e replayEnv) prune(t *testing.T, id int64) {
	t.Helper()
	_, err := e.pool.Exec(t.Context(), `UPDATE events SET payload = '', payload_pruned_at = now() WHERE id = $1`, id)
	require.NoError(t, err)
}

func (e replayEnv) agent(t *testing.T, name string) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, e.pool.QueryRow(t.Context(),
		`INSERT INTO agents (human_id, name) VALUES ($1, $2) RETURNING id`, e.human, name).Scan(&id))
	return id
}

// todoRow is a todo's queue, agent (” for none), kind, payload, event id
// and trace context.
type todoRow struct {
	Queue, Agent, Kind, Payload, Trace string
	Event                              int64
}

// todo reads one of e's todos.
func (e replayEnv) todo(t *testing.T, id int64) todoRow {
	t.Helper()
	var r todoRow
	require.NoError(t, e.pool.QueryRow(t.Context(), `
		SELECT queue, coalesce(agent_id::text, ''), kind, payload::text, coalesce(event_id, 0), coalesce(trace_parent, '')
		FROM todos WHERE id = $1 AND human_id = $2`, id, e.human).Scan(&r.Queue, &r.Agent, &r.Kind, &r.Payload, &r.Event, &r.Trace))
	return r
}

func message(err error) string {
	st, _ := apierr.ToStatus(err)
	return st.Message()
}

// fieldsOf is the fields an INVALID_ARGUMENT names.
func fieldsOf(err error) []string {
	st, _ := apierr.ToStatus(err)
	var fields []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				fields = append(fields, v.GetField())
			}
		}
	}
	return fields
}

// TestReplayEventCreatesAClaimableTodoAndRecordsIt: a stored webhook event
// replayed gets a new todo in its endpoint's current queue, shaped like the
// original (a reference to the event, its trace context), that a worker
// claims; the replay is recorded on the event.
func TestReplayEventCreatesAClaimableTodoAndRecordsIt(t *testing.T) {
	t.Parallel()
	e := newReplayEnv(t)
	id, endpoint := e.hook(t, "", `{"n":1}`)
	const trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	_, err := e.pool.Exec(t.Context(), `UPDATE events SET trace_parent = $1 WHERE id = $2`, trace, id)
	require.NoError(t, err)
	// The endpoint now sends its work elsewhere: a replay follows it.
	_, err = e.pool.Exec(t.Context(), `UPDATE endpoints SET queue = 'hooks-v2' WHERE id = $1`, endpoint)
	require.NoError(t, err)

	before, err := e.srv.GetEvent(asHuman(t, e.human, nil), &ingestv1.GetEventRequest{Id: id})
	require.NoError(t, err)
	require.Zero(t, before.GetEvent().GetReplayCount())
	require.Nil(t, before.GetEvent().GetLastReplayedAt())

	res, err := e.srv.ReplayEvent(asHuman(t, e.human, nil), &ingestv1.ReplayEventRequest{EventId: id})
	require.NoError(t, err)
	require.False(t, res.GetDuplicate())
	require.Len(t, res.GetTodos(), 1)
	require.Equal(t, "hooks-v2", res.GetTodos()[0].GetQueue())
	require.EqualValues(t, 1, res.GetEvent().GetReplayCount())
	require.NotNil(t, res.GetEvent().GetLastReplayedAt())
	require.Empty(t, res.GetEvent().GetPayload(), "the answer leaves the payload to GetEvent")

	got := e.todo(t, res.GetTodos()[0].GetTodoId())
	require.Equal(t, trace, got.Trace)
	require.Equal(t, id, got.Event)

	ctx := auth.NewContext(context.Background(), auth.Principal{CredentialID: uuid.New(), HumanID: e.human, Scopes: []auth.Scope{auth.ScopeAgent}})
	claimed, err := e.queue.Claim(ctx, &queuev1.ClaimRequest{Queue: "hooks-v2", WorkerId: "w", MaxTodos: 10})
	require.NoError(t, err)
	require.Len(t, claimed.GetTodos(), 1)
	td := claimed.GetTodos()[0]
	require.Equal(t, res.GetTodos()[0].GetTodoId(), td.GetId())
	require.Equal(t, "webhook", td.GetKind())
	require.Equal(t, id, td.GetEventId())
	require.Equal(t, id, int64(td.GetPayload().GetFields()["event_id"].GetNumberValue()))
	require.Equal(t, "endpoint:"+endpoint.String(), td.GetPayload().GetFields()["source"].GetStringValue())

	after, err := e.srv.GetEvent(asHuman(t, e.human, nil), &ingestv1.GetEventRequest{Id: id})
	require.NoError(t, err)
	require.EqualValues(t, 1, after.GetEvent().GetReplayCount())
	require.WithinDuration(t, time.Now(), after.GetEvent().GetLastReplayedAt().AsTime(), time.Minute)
	list, err := e.srv.ListEvents(asHuman(t, e.human, nil), &ingestv1.ListEventsRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetEvents(), 1)
	require.EqualValues(t, 1, list.GetEvents()[0].GetReplayCount())
}

// TestReplayKeyMakesRetriesIdempotent: the same replay_key answers the
// first todo and counts once; without a key every call replays again.
func TestReplayKeyMakesRetriesIdempotent(t *testing.T) {
	t.Parallel()
	e := newReplayEnv(t)
	id, _ := e.hook(t, "", `{"n":2}`)
	ctx := asHuman(t, e.human, nil)
	req := &ingestv1.ReplayEventRequest{EventId: id, ReplayKey: "incident-7"}
	first, err := e.srv.ReplayEvent(ctx, req)
	require.NoError(t, err)
	again, err := e.srv.ReplayEvent(ctx, req)
	require.NoError(t, err)
	require.True(t, again.GetDuplicate())
	require.Equal(t, first.GetTodos()[0].GetTodoId(), again.GetTodos()[0].GetTodoId())
	require.EqualValues(t, 1, again.GetEvent().GetReplayCount())
	require.Equal(t, 2, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1`), "the original and one replay")

	other, err := e.srv.ReplayEvent(ctx, &ingestv1.ReplayEventRequest{EventId: id, ReplayKey: "incident-8"})
	require.NoError(t, err)
	require.False(t, other.GetDuplicate())
	for range 2 {
		res, err := e.srv.ReplayEvent(ctx, &ingestv1.ReplayEventRequest{EventId: id})
		require.NoError(t, err)
		require.False(t, res.GetDuplicate())
	}
	require.Equal(t, 5, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1`))
	got, err := e.srv.GetEvent(ctx, &ingestv1.GetEventRequest{Id: id})
	require.NoError(t, err)
	require.EqualValues(t, 4, got.GetEvent().GetReplayCount())
}

// TestReplayOverridesTheTarget: queue and agent_id name where the todo
// goes; agent_id alone readdresses the origin's queue; both are checked.
func TestReplayOverridesTheTarget(t *testing.T) {
	t.Parallel()
	e := newReplayEnv(t)
	id, _ := e.hook(t, "", `{"n":3}`)
	agent := e.agent(t, "fixer")
	ctx := asHuman(t, e.human, nil)

	res, err := e.srv.ReplayEvent(ctx, &ingestv1.ReplayEventRequest{EventId: id, Queue: "triage", AgentId: agent.String()})
	require.NoError(t, err)
	got := e.todo(t, res.GetTodos()[0].GetTodoId())
	assert.Equal(t, "triage", got.Queue)
	assert.Equal(t, agent.String(), got.Agent)
	assert.Equal(t, agent.String(), res.GetTodos()[0].GetAgentId())

	res, err = e.srv.ReplayEvent(ctx, &ingestv1.ReplayEventRequest{EventId: id, AgentId: agent.String()})
	require.NoError(t, err)
	got = e.todo(t, res.GetTodos()[0].GetTodoId())
	assert.Equal(t, "hooks", got.Queue)
	assert.Equal(t, agent.String(), got.Agent)

	res, err = e.srv.ReplayEvent(ctx, &ingestv1.ReplayEventRequest{EventId: id, Queue: "triage"})
	require.NoError(t, err)
	assert.Empty(t, e.todo(t, res.GetTodos()[0].GetTodoId()).Agent, "a named queue without agent_id: no agent")

	_, err = e.srv.ReplayEvent(ctx, &ingestv1.ReplayEventRequest{EventId: id, AgentId: uuid.NewString()})
	require.Equal(t, codes.NotFound, code(err))
	other := e.neighbour(t)
	_, err = e.srv.ReplayEvent(ctx, &ingestv1.ReplayEventRequest{EventId: id, AgentId: other.agent(t, "theirs").String()})
	require.Equal(t, codes.NotFound, code(err), "another tenant's agent")
	for field, req := range map[string]*ingestv1.ReplayEventRequest{
		"queue":      {EventId: id, Queue: "Not A Queue"},
		"agent_id":   {EventId: id, AgentId: "nope"},
		"event_id":   {EventId: 0},
		"replay_key": {EventId: id, ReplayKey: strings.Repeat("k", 129)},
	} {
		_, err := e.srv.ReplayEvent(ctx, req)
		require.Equal(t, codes.InvalidArgument, code(err), field)
		require.Equal(t, []string{field}, fieldsOf(err), field)
	}
	require.Equal(t, 3, e.count(t, `SELECT replay_count FROM events WHERE human_id = $1`))
}

// TestReplayRefusals: a pruned payload, another tenant's event and an event
// with nowhere to go are refused, and write nothing.
func TestReplayRefusals(t *testing.T) {
	t.Parallel()
	e := newReplayEnv(t)
	ctx := asHuman(t, e.human, nil)
	pruned, _ := e.hook(t, "", `{"n":4}`)
	e.prune(t, pruned)
	_, err := e.srv.ReplayEvent(ctx, &ingestv1.ReplayEventRequest{EventId: pruned})
	require.Equal(t, codes.FailedPrecondition, code(err))
	require.Contains(t, message(err), "payload was pruned")
	_, err = e.srv.ReplayEvent(ctx, &ingestv1.ReplayEventRequest{EventId: pruned, Queue: "triage"})
	require.Equal(t, codes.FailedPrecondition, code(err), "a queue does not bring the payload back")

	other := e.neighbour(t)
	theirs, _ := other.hook(t, "", `{"n":5}`)
	_, err = e.srv.ReplayEvent(ctx, &ingestv1.ReplayEventRequest{EventId: theirs, Queue: "triage"})
	require.Equal(t, codes.NotFound, code(err))
	_, err = e.srv.ReplayEvent(ctx, &ingestv1.ReplayEventRequest{EventId: theirs + 1_000_000})
	require.Equal(t, codes.NotFound, code(err))

	// A publish without a queue, and a deleted endpoint's event, have no
	// origin to send work to: name a queue.
	note, err := e.srv.PublishEvent(ctx, &ingestv1.PublishEventRequest{Topic: "note"})
	require.NoError(t, err)
	gone, endpoint := e.hook(t, "", `{"n":6}`)
	_, err = e.pool.Exec(t.Context(), `DELETE FROM endpoints WHERE id = $1`, endpoint)
	require.NoError(t, err)
	for _, id := range []int64{note.GetEvent().GetId(), gone} {
		_, err = e.srv.ReplayEvent(ctx, &ingestv1.ReplayEventRequest{EventId: id})
		require.Equal(t, codes.FailedPrecondition, code(err))
		require.Contains(t, message(err), "name a queue")
	}
	require.Zero(t, e.count(t, `SELECT coalesce(sum(replay_count), 0)::integer FROM events WHERE human_id = $1`))
	todosBefore := e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1`)
	res, err := e.srv.ReplayEvent(ctx, &ingestv1.ReplayEventRequest{EventId: gone, Queue: "triage"})
	require.NoError(t, err)
	require.Equal(t, "triage", e.todo(t, res.GetTodos()[0].GetTodoId()).Queue)
	require.Equal(t, todosBefore+1, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1`))
}

// TestReplayOfAPublishedEvent goes where its todo went, shaped like it.
func TestReplayOfAPublishedEvent(t *testing.T) {
	t.Parallel()
	e := newReplayEnv(t)
	agent := e.agent(t, "builder")
	ctx := asHuman(t, e.human, nil)
	pub, err := e.srv.PublishEvent(ctx, &ingestv1.PublishEventRequest{Topic: "build.finished", Queue: "builds", AgentId: agent.String()})
	require.NoError(t, err)
	res, err := e.srv.ReplayEvent(ctx, &ingestv1.ReplayEventRequest{EventId: pub.GetEvent().GetId()})
	require.NoError(t, err)
	got := e.todo(t, res.GetTodos()[0].GetTodoId())
	require.Equal(t, todoRow{Queue: "builds", Agent: agent.String(), Kind: "build.finished", Payload: "{}", Event: pub.GetEvent().GetId()}, got)
	require.Equal(t, e.todo(t, pub.GetTodoId()).Payload, got.Payload, "the original's shape")
}

// TestReplayAsAnAgentReachesOnlyItsEvents: an agent replays the events it
// may read; another agent's is NOT_FOUND, in bulk too.
func TestReplayAsAnAgentReachesOnlyItsEvents(t *testing.T) {
	t.Parallel()
	e := newReplayEnv(t)
	a, b := e.agent(t, "a"), e.agent(t, "b")
	mine, _ := e.hook(t, "agent_id = '"+a.String()+"'", `{"to":"a"}`)
	theirs, _ := e.hook(t, "agent_id = '"+b.String()+"'", `{"to":"b"}`)
	shared, _ := e.hook(t, "", `{"to":"anyone"}`)
	ctx := asAgent(t, e.human, a)

	_, err := e.srv.ReplayEvent(ctx, &ingestv1.ReplayEventRequest{EventId: theirs})
	require.Equal(t, codes.NotFound, code(err))
	res, err := e.srv.ReplayEvent(ctx, &ingestv1.ReplayEventRequest{EventId: mine})
	require.NoError(t, err)
	require.Equal(t, a.String(), res.GetTodos()[0].GetAgentId(), "the endpoint's agent")

	bulk, err := e.srv.ReplayEvents(ctx, &ingestv1.ReplayEventsRequest{Limit: 10})
	require.NoError(t, err)
	require.EqualValues(t, 2, bulk.GetReplayed(), "its own and the shared one")
	require.Equal(t, shared, bulk.GetLastEventId())
	require.Equal(t, 0, e.count(t, `SELECT replay_count FROM events WHERE human_id = $1 AND payload = '{"to":"b"}'`))
}

// TestConcurrentRetriesOfAKeyedReplayCreateOneTodo: retries racing each
// other (a client that timed out and retried at once) all answer the same
// todo, and the replay counts once.
func TestConcurrentRetriesOfAKeyedReplayCreateOneTodo(t *testing.T) {
	t.Parallel()
	e := newReplayEnv(t)
	id, _ := e.hook(t, "", `{"n":9}`)
	ctx := asHuman(t, e.human, nil)
	const n = 8
	todos := make(chan int64, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.srv.ReplayEvent(ctx, &ingestv1.ReplayEventRequest{EventId: id, ReplayKey: "retry"})
			if assert.NoError(t, err) {
				todos <- res.GetTodos()[0].GetTodoId()
			}
		}()
	}
	wg.Wait()
	close(todos)
	seen := map[int64]bool{}
	for td := range todos {
		seen[td] = true
	}
	require.Len(t, seen, 1)
	require.Equal(t, 2, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1`), "the original and one replay")
	require.Equal(t, 1, e.count(t, `SELECT replay_count FROM events WHERE human_id = $1`))
}
