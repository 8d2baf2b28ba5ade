//go:build integration

package ingest_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
)

// route is one endpoint_routes row a test stores (as the admin API would).
type route struct {
	queue, topic, filter string
	agent                *uuid.UUID
}

// routedEndpoint creates a Standard Webhooks endpoint (signed delivery ids:
// its events take the group commit) with routes, and returns its slug.
func (e *env) routedEndpoint(t testing.TB, scheme string, routes ...route) string {
	t.Helper()
	var secret []byte
	if scheme == "standard_webhooks" {
		secret = []byte(whsec)
	}
	slug := e.endpoint(t, scheme, secret, "")
	for i, r := range routes {
		_, err := e.pool.Exec(t.Context(), `INSERT INTO endpoint_routes (endpoint_id, position, queue, agent_id, topic_glob, filter)
			SELECT id, $2, $3, $4, nullif($5, ''), nullif($6, '') FROM endpoints WHERE slug = $1`, slug, i, r.queue, r.agent, r.topic, r.filter)
		require.NoError(t, err)
	}
	return slug
}

// queuesOf lists the queues of the todos of the event with delivery id id,
// in order.
func (e *env) queuesOf(t *testing.T, id string) []string {
	t.Helper()
	rows, err := e.pool.Query(t.Context(), `SELECT t.queue FROM todos t JOIN events ev ON ev.id = t.event_id
		WHERE ev.human_id = $1 AND ev.delivery_id = $2 ORDER BY t.queue`, e.human, id)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var q string
		require.NoError(t, rows.Scan(&q))
		out = append(out, q)
	}
	require.NoError(t, rows.Err())
	return out
}

func (e *env) signedPost(t *testing.T, slug, id, body string, extra http.Header) (int, string) {
	t.Helper()
	h := standardHeaders(t, id, time.Now(), []byte(body))
	for k, v := range extra {
		h[k] = v
	}
	return e.post(t, slug, []byte(body), h)
}

// TestRoutesFanOutByFilter: each event gets a todo in exactly the queues
// whose routes match it: no filter, CEL over the body, CEL over a header
// (lower-case name), a topic glob (the event has no topic here, so "**"
// matches and "stripe.*" does not); a body that is not JSON is null to the
// filters, and a filter that fails on it matches nothing. No route
// matching stores the event without a todo (still 200 accepted).
func TestRoutesFanOutByFilter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	slug := e.routedEndpoint(t, "standard_webhooks",
		route{queue: "all"},
		route{queue: "opened", filter: `body.action == "opened"`},
		route{queue: "prs", filter: `headers["x-github-event"] == "pull_request" && body.number > 10`},
		route{queue: "any-topic", topic: "**"},
		route{queue: "stripe", topic: "stripe.*"},
		route{queue: "not-json", filter: `body == null`},
	)
	for _, tc := range []struct {
		id, body, event string
		want            []string
	}{
		{"m1", `{"action":"opened","number":42}`, "pull_request", []string{"all", "any-topic", "opened", "prs"}},
		{"m2", `{"action":"closed","number":42}`, "pull_request", []string{"all", "any-topic", "prs"}},
		{"m3", `{"action":"opened","number":7}`, "issues", []string{"all", "any-topic", "opened"}},
		{"m4", `plain text`, "pull_request", []string{"all", "any-topic", "not-json"}},
	} {
		code, resp := e.signedPost(t, slug, tc.id, tc.body, http.Header{"X-GitHub-Event": {tc.event}})
		require.Equal(t, http.StatusOK, code, resp)
		require.Contains(t, resp, `"accepted"`)
		require.Equal(t, tc.want, e.queuesOf(t, tc.id), tc.id)
	}

	none := e.routedEndpoint(t, "standard_webhooks", route{queue: "never", filter: `headers["x-never"] == "1"`})
	code, resp := e.signedPost(t, none, "n1", `{}`, nil)
	require.Equal(t, http.StatusOK, code, resp)
	require.Contains(t, resp, `"accepted"`)
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1 AND delivery_id = 'n1'`), "stored")
	require.Empty(t, e.queuesOf(t, "n1"), "without a todo")
}

// TestRoutesAgents: a route's agent is its todo's addressee; the event is
// for that agent when every matched route addresses it, else shared
// (an unaddressed todo's claimer must read it), and the endpoint's own
// agent when nothing matched.
func TestRoutesAgents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var a, b uuid.UUID
	require.NoError(t, e.pool.QueryRow(t.Context(), `INSERT INTO agents (human_id, name) VALUES ($1, 'a') RETURNING id`, e.human).Scan(&a))
	require.NoError(t, e.pool.QueryRow(t.Context(), `INSERT INTO agents (human_id, name) VALUES ($1, 'b') RETURNING id`, e.human).Scan(&b))
	slug := e.routedEndpoint(t, "standard_webhooks",
		route{queue: "work", agent: &a, filter: `body.to == "a" || body.to == "both"`},
		route{queue: "work", agent: &a, filter: `body.to == "a"`}, // same target: one todo
		route{queue: "shared", filter: `body.to == "both"`},
	)
	_, err := e.pool.Exec(t.Context(), `UPDATE endpoints SET agent_id = $1 WHERE slug = $2`, b, slug)
	require.NoError(t, err)

	eventAgent := func(id string) *uuid.UUID {
		var agent *uuid.UUID
		require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT agent_id FROM events WHERE delivery_id = $1`, id).Scan(&agent))
		return agent
	}
	code, resp := e.signedPost(t, slug, "to-a", `{"to":"a"}`, nil)
	require.Equal(t, http.StatusOK, code, resp)
	require.Equal(t, []string{"work"}, e.queuesOf(t, "to-a"))
	var todoAgent *uuid.UUID
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT t.agent_id FROM todos t JOIN events ev ON ev.id = t.event_id WHERE ev.delivery_id = 'to-a'`).Scan(&todoAgent))
	require.Equal(t, &a, todoAgent)
	require.Equal(t, &a, eventAgent("to-a"))

	code, resp = e.signedPost(t, slug, "to-both", `{"to":"both"}`, nil)
	require.Equal(t, http.StatusOK, code, resp)
	require.Equal(t, []string{"shared", "work"}, e.queuesOf(t, "to-both"))
	require.Nil(t, eventAgent("to-both"), "shared: an unaddressed todo's claimer reads it")

	code, resp = e.signedPost(t, slug, "to-none", `{"to":"nobody"}`, nil)
	require.Equal(t, http.StatusOK, code, resp)
	require.Empty(t, e.queuesOf(t, "to-none"))
	require.Equal(t, &b, eventAgent("to-none"), "no route: the endpoint's agent")
}

// TestRoutesDuplicateCreatesNoTodos: a redelivery, by signed id (group
// commit) or by body hash (scheme none), stores nothing and queues nothing.
func TestRoutesDuplicateCreatesNoTodos(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	signed := e.routedEndpoint(t, "standard_webhooks", route{queue: "a"}, route{queue: "b", filter: "true"})
	unsigned := e.routedEndpoint(t, "none", route{queue: "c"}, route{queue: "d", filter: `body.x == 1`})
	// Body-hash dedup is the endpoint's choice (on by default for a scheme
	// without a signed id; a row inserted here starts with it off).
	_, err := e.pool.Exec(t.Context(), `UPDATE endpoints SET body_dedup_window_seconds = 3600 WHERE slug = $1`, unsigned)
	require.NoError(t, err)
	for range 2 {
		code, resp := e.signedPost(t, signed, "dup", `{"x":1}`, nil)
		require.Equal(t, http.StatusOK, code, resp)
		code, resp = e.post(t, unsigned, []byte(`{"x":1}`), nil)
		require.Equal(t, http.StatusOK, code, resp)
	}
	require.Equal(t, 2, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`))
	require.Equal(t, 4, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1`))
	require.Equal(t, []string{"a", "b"}, e.queuesOf(t, "dup"))
	require.Equal(t, 2, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1 AND queue IN ('c', 'd')`))
}

// TestRoutesAtomic: when one route's todo cannot be inserted, neither the
// event nor any other route's todo is stored, and the sender gets 503 (it
// retries). The failure is provoked by a trigger in this test's own
// database that refuses todos of one queue.
func TestRoutesAtomic(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.pool.Exec(t.Context(), `
		CREATE FUNCTION refuse_explode() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.queue = 'explode' THEN RAISE EXCEPTION 'refused by the test'; END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse_explode BEFORE INSERT ON todos FOR EACH ROW EXECUTE FUNCTION refuse_explode();`)
	require.NoError(t, err)
	slug := e.routedEndpoint(t, "standard_webhooks", route{queue: "fine"}, route{queue: "explode", filter: `body.boom == true`})
	unsigned := e.routedEndpoint(t, "none", route{queue: "fine"}, route{queue: "explode", filter: `body.boom == true`})

	code, _ := e.signedPost(t, slug, "boom", `{"boom":true}`, nil)
	require.Equal(t, http.StatusServiceUnavailable, code)
	code, _ = e.post(t, unsigned, []byte(`{"boom":true}`), nil)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, 0, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`))
	require.Equal(t, 0, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1`))

	code, resp := e.signedPost(t, slug, "calm", `{"boom":false}`, nil)
	require.Equal(t, http.StatusOK, code, resp)
	require.Equal(t, []string{"fine"}, e.queuesOf(t, "calm"))
}

// TestRoutesConcurrentMixedMatches: concurrent deliveries to one endpoint
// that match different routes share group commits only with deliveries
// that matched the same routes; each event gets exactly its own todos.
func TestRoutesConcurrentMixedMatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	slug := e.routedEndpoint(t, "standard_webhooks",
		route{queue: "all"}, route{queue: "even", filter: `body.n % 2 == 0`}, route{queue: "odd", filter: `body.n % 2 == 1`})
	const n = 40
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			codes[i], _ = e.signedPost(t, slug, fmt.Sprintf("c%d", i), fmt.Sprintf(`{"n":%d}`, i), nil)
		})
	}
	wg.Wait()
	for i := range n {
		require.Equal(t, http.StatusOK, codes[i], i)
		want := []string{"all", "odd"}
		if i%2 == 0 {
			want = []string{"all", "even"}
		}
		require.Equal(t, want, e.queuesOf(t, fmt.Sprintf("c%d", i)), i)
	}
}

// TestRoutesCreatedByAdmin: routes stored through AdminService (its CEL
// checked, then compiled again by the edge) route the edge's events.
func TestRoutesCreatedByAdmin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	adm, ctx := e.admin(t)
	created, err := adm.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Queue: "hooks", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_STANDARD_WEBHOOKS,
		Routes: []*adminv1.Route{
			{Queue: "paid", Filter: `body.type == "invoice.paid"`},
			{Queue: "audit"},
			{Queue: "failed", Filter: `body.type == "invoice.failed"`},
		},
	}})
	require.NoError(t, err)
	body := []byte(`{"type":"invoice.paid"}`)
	code, resp := e.post(t, created.GetEndpoint().GetSlug(), body, signStandard(t, created.GetSecret(), "msg_routed", time.Now(), body))
	require.Equal(t, http.StatusOK, code, resp)
	require.Equal(t, []string{"audit", "paid"}, e.queuesOf(t, "msg_routed"))
	require.Equal(t, 0, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1 AND queue = 'hooks'`), "routes replace the endpoint's queue")
}

// TestReplayFollowsRoutes: a replay that names no queue sends the event
// through its endpoint's current routes, evaluated on the stored topic,
// headers and body; with none matching there is no target.
func TestReplayFollowsRoutes(t *testing.T) {
	t.Parallel()
	e := newReplayEnv(t)
	slug := e.routedEndpoint(t, "standard_webhooks",
		route{queue: "paid", filter: `body.type == "invoice.paid" && headers["x-tenant"] == "acme"`},
		route{queue: "audit"},
	)
	code, resp := e.signedPost(t, slug, "r1", `{"type":"invoice.paid"}`, http.Header{"X-Tenant": {"acme"}})
	require.Equal(t, http.StatusOK, code, resp)
	var id int64
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT id FROM events WHERE delivery_id = 'r1'`).Scan(&id))
	// The routes change: a replay follows the current ones.
	_, err := e.pool.Exec(t.Context(), `UPDATE endpoint_routes SET queue = 'archive' WHERE queue = 'audit'`)
	require.NoError(t, err)
	e.srv.SetEndpointCacheTTL(0)

	res, err := e.srv.ReplayEvent(asHuman(t, e.human, nil), &ingestv1.ReplayEventRequest{EventId: id})
	require.NoError(t, err)
	var queues []string
	for _, td := range res.GetTodos() {
		queues = append(queues, td.GetQueue())
	}
	require.ElementsMatch(t, []string{"paid", "archive"}, queues)

	_, err = e.pool.Exec(t.Context(), `DELETE FROM endpoint_routes WHERE queue = 'archive'`)
	require.NoError(t, err)
	_, err = e.pool.Exec(t.Context(), `UPDATE endpoint_routes SET filter = 'body.type == "other"'`)
	require.NoError(t, err)
	_, err = e.srv.ReplayEvent(asHuman(t, e.human, nil), &ingestv1.ReplayEventRequest{EventId: id})
	st, _ := apierr.ToStatus(err)
	require.Equal(t, codes.FailedPrecondition, st.Code(), "no route matches it now: %v", err)
}
