//go:build integration

package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/lifecycle"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/queue"
)

// env is one test's queue server over its own migrated database, with one
// tenant (human) that has one agent.
type env struct {
	srv   *queue.Server
	pool  *pgxpool.Pool
	human uuid.UUID
	agent uuid.UUID
	url   string // the test's database
}

func newEnv(t *testing.T, opts ...queue.Options) *env {
	t.Helper()
	url := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, url, nil)
	var o queue.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.HotPool == nil { // as a node runs it: worker statements on generic plans
		o.HotPool = pgtest.OpenPool(t, url, func(c *pgxpool.Config) {
			c.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
		})
	}
	e := &env{srv: queue.New(zap.NewNop(), pool, o), pool: pool, url: url}
	e.human = seedHuman(t, pool)
	e.agent = seedAgent(t, pool, e.human, "worker")
	return e
}

// seedHuman inserts a tenant directly: no queue RPC creates humans.
func seedHuman(t testing.TB, pool *pgxpool.Pool) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, pool.QueryRow(t.Context(),
		`INSERT INTO humans (email) VALUES ($1) RETURNING id`, uuid.NewString()+"@example.test").Scan(&id))
	return id
}

func seedAgent(t testing.TB, pool *pgxpool.Pool, human uuid.UUID, name string) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, pool.QueryRow(t.Context(),
		`INSERT INTO agents (human_id, name) VALUES ($1, $2) RETURNING id`, human, name).Scan(&id))
	return id
}

// asHuman is a human's admin credential (admin implies publisher and read).
func asHuman(t testing.TB, human uuid.UUID) context.Context {
	t.Helper()
	return auth.NewContext(t.Context(), auth.Principal{CredentialID: uuid.New(), HumanID: human, Scopes: []auth.Scope{auth.ScopeAdmin}})
}

// asAgent is a credential minted for an agent.
func asAgent(t testing.TB, human, agent uuid.UUID) context.Context {
	t.Helper()
	return auth.NewContext(t.Context(), auth.Principal{
		CredentialID: uuid.New(), HumanID: human, AgentID: &agent, Scopes: []auth.Scope{auth.ScopeAgent},
	})
}

func (e *env) owner(t *testing.T) context.Context  { t.Helper(); return asHuman(t, e.human) }
func (e *env) worker(t *testing.T) context.Context { t.Helper(); return asAgent(t, e.human, e.agent) }

// code is the gRPC code a client would see for err.
func code(err error) codes.Code {
	st, _ := apierr.ToStatus(err)
	return st.Code()
}

func payload(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	require.NoError(t, err)
	return s
}

// enqueue adds n todos to q and returns their ids.
func (e *env) enqueue(t *testing.T, q string, n int) []int64 {
	t.Helper()
	ids := make([]int64, 0, n)
	for i := 0; i < n; i += 1000 {
		reqs := make([]*queuev1.EnqueueRequest, min(1000, n-i))
		for j := range reqs {
			reqs[j] = &queuev1.EnqueueRequest{Kind: fmt.Sprintf("k%d", i+j)}
		}
		res, err := e.srv.EnqueueBatch(e.owner(t), &queuev1.EnqueueBatchRequest{Queue: q, Requests: reqs})
		require.NoError(t, err)
		for _, r := range res.GetResponses() {
			ids = append(ids, r.GetTodo().GetId())
		}
	}
	return ids
}

// claim claims up to n todos of q as the env's agent.
func (e *env) claim(t *testing.T, q string, n int32) []*queuev1.Todo {
	t.Helper()
	res, err := e.srv.Claim(e.worker(t), &queuev1.ClaimRequest{Queue: q, WorkerId: "w1", MaxTodos: n})
	require.NoError(t, err)
	return res.GetTodos()
}

// claimOne claims exactly one todo of q.
func (e *env) claimOne(t *testing.T, q string) *queuev1.Todo {
	t.Helper()
	todos := e.claim(t, q, 1)
	require.Len(t, todos, 1)
	return todos[0]
}

// expire makes a running todo's lease expired now (instead of sleeping).
func (e *env) expire(t *testing.T, id int64) {
	t.Helper()
	_, err := e.pool.Exec(t.Context(), `UPDATE todos SET lease_expires_at = now() - interval '1 second' WHERE id = $1 AND state = 'running'`, id)
	require.NoError(t, err)
}

// makeDue moves a pending todo's run_at to now (skipping its backoff).
func (e *env) makeDue(t *testing.T, id int64) {
	t.Helper()
	_, err := e.pool.Exec(t.Context(), `UPDATE todos SET run_at = now() WHERE id = $1 AND state = 'pending'`, id)
	require.NoError(t, err)
}

func (e *env) get(t *testing.T, id int64) *queuev1.Todo {
	t.Helper()
	res, err := e.srv.GetTodo(e.owner(t), &queuev1.GetTodoRequest{Id: id})
	require.NoError(t, err)
	return res.GetTodo()
}

// count runs a count(*) query.
func (e *env) count(t *testing.T, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, e.pool.QueryRow(t.Context(), sql, args...).Scan(&n))
	return n
}

// snapshot is a digest of the whole todos table, to prove a call changed
// nothing.
func (e *env) snapshot(t *testing.T) string {
	t.Helper()
	var s string
	require.NoError(t, e.pool.QueryRow(t.Context(),
		`SELECT coalesce(md5(string_agg(row_to_json(t)::text, ',' ORDER BY id)), '') FROM todos AS t`).Scan(&s))
	return s
}

// setSetting sets one integer field of a stored setting, as an operator's
// UpdateSetting would (the queue reads settings on every use).
func (e *env) setSetting(t *testing.T, key, field string, value int) {
	t.Helper()
	tag, err := e.pool.Exec(t.Context(),
		`UPDATE settings SET value = jsonb_set(value, ARRAY[$2::text], to_jsonb($3::integer)) WHERE key = $1`, key, field, value)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected(), "setting %s", key)
}

// dbNow is the database clock.
func (e *env) dbNow(t *testing.T) time.Time {
	t.Helper()
	var now time.Time
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT now()`).Scan(&now))
	return now
}

// component is the background part of srv named name.
func component(t *testing.T, srv *queue.Server, name string) lifecycle.Component {
	t.Helper()
	for _, c := range srv.Components() {
		if c.Name() == name {
			return c
		}
	}
	t.Fatalf("no component %q", name)
	return nil
}
