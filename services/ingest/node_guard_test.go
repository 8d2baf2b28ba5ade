//go:build integration

package ingest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/node"
)

// These tests run a whole node (`serve all`: the interceptor chain, the
// REST gateway, every service) over its own database, the way
// services/node's tests do, to show the request guard at the edge: bad
// text and poison payloads are INVALID_ARGUMENT (400 over REST) naming the
// field, and nothing is stored.

type guardNode struct {
	queue queuev1.QueueServiceClient
	http  string
	token string
	pool  *pgxpool.Pool
}

func startNode(t *testing.T) *guardNode {
	t.Helper()
	db := pgtest.NewDatabase(t)
	cfg := config.Default()
	// Pools of a test's size: the server's connections are shared with
	// the tests running in parallel (pgtest.NodeURL).
	cfg.Postgres.URL = pgtest.NodeURL(db)
	token, _, err := auth.NewToken()
	require.NoError(t, err)
	cfg.Auth.BootstrapToken = token
	cfg.GRPC.Addr, cfg.HTTP.Addr, cfg.Cluster.Endpoint = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.Cluster.NodeID = "guard-node"
	cfg.Shutdown.Grace = 5 * time.Second
	svcs, err := node.ParseServices("all")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	n, err := node.New(ctx, cfg, zap.NewNop(), svcs)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err, "the node stops cleanly")
		case <-time.After(20 * time.Second):
			t.Error("node did not stop within 20s")
		}
	})
	conn, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(auth.Bearer{Token: token, AllowInsecure: true}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.Eventually(t, func() bool {
		resp, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{})
		return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
	}, 30*time.Second, 20*time.Millisecond, "node never reported SERVING")
	pool, err := pgxpool.New(t.Context(), db)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return &guardNode{queue: queuev1.NewQueueServiceClient(conn), http: "http://" + n.HTTPAddr(), token: token, pool: pool}
}

func (g *guardNode) todos(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, g.pool.QueryRow(t.Context(), `SELECT count(*) FROM todos`).Scan(&n))
	return n
}

// rest posts body to path and returns the status and the error's field
// violations (the gateway's google.rpc.Status JSON).
func (g *guardNode) rest(t *testing.T, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, g.http+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+g.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func violations(err error) []string {
	var fields []string
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				fields = append(fields, v.GetField())
			}
		}
	}
	return fields
}

// deep is a JSON object nested n levels: {"a":{"a":…{}}}.
func deep(n int) *structpb.Struct {
	s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for range n - 1 {
		s = &structpb.Struct{Fields: map[string]*structpb.Value{"a": structpb.NewStructValue(s)}}
	}
	return s
}

func TestNodeRefusesBadTextAndPoisonPayloads(t *testing.T) {
	t.Parallel()
	g := startNode(t)
	withNUL, err := structpb.NewStruct(map[string]any{"a": map[string]any{"b": "x\x00y"}})
	require.NoError(t, err)

	for name, c := range map[string]struct {
		req   *queuev1.EnqueueRequest
		field string
		says  string
	}{
		"NUL in dedupe_key":         {&queuev1.EnqueueRequest{Queue: "q", DedupeKey: "k\x00"}, "dedupe_key", "NUL"},
		"NUL in a nested value":     {&queuev1.EnqueueRequest{Queue: "q", Payload: withNUL}, "payload.a.b", "NUL"},
		"payload nested 65 levels":  {&queuev1.EnqueueRequest{Queue: "q", Payload: deep(65)}, "payload", "64 levels"},
		"payload nested 3,333 deep": {&queuev1.EnqueueRequest{Queue: "q", Payload: deep(3333)}, "payload", "64 levels"},
	} {
		_, err := g.queue.Enqueue(t.Context(), c.req)
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%s: %v", name, err)
		require.Equal(t, []string{c.field}, violations(err), name)
		require.Contains(t, status.Convert(err).Message(), c.says, name)
	}
	require.Zero(t, g.todos(t), "nothing stored")

	_, err = g.queue.Enqueue(t.Context(), &queuev1.EnqueueRequest{Queue: "q", DedupeKey: "ключ", Payload: deep(64)})
	require.NoError(t, err, "64 levels are accepted")
	require.Equal(t, 1, g.todos(t))
}

// TestNodeRESTRefusesBadTextWith400: over the REST gateway a JSON "\u0000"
// decodes to a NUL, which the guard refuses like any other (400 naming the
// field); "\ud800" (an unpaired surrogate) is refused by protojson itself
// while decoding the body, also 400. Neither is ever a 500 or a 503.
func TestNodeRESTRefusesBadTextWith400(t *testing.T) {
	t.Parallel()
	g := startNode(t)
	for name, c := range map[string]struct {
		body  string
		field string // "" when the gateway's decoder refuses the body
	}{
		`"\u0000" in dedupeKey`:       {`{"dedupeKey":"a\u0000"}`, "dedupe_key"},
		`"\u0000" in a payload value`: {`{"payload":{"a":{"b":"\u0000"}}}`, "payload.a.b"},
		`"\u0000" in a payload key`:   {`{"payload":{"a\u0000":1}}`, `payload["a\x00"]`},
		`"\ud800" in dedupeKey`:       {`{"dedupeKey":"\ud800"}`, ""},
		`"\ud800" in a payload`:       {`{"payload":{"a":"\ud800"}}`, ""},
		"payload nested 65 levels":    {`{"payload":` + strings.Repeat(`{"a":`, 64) + `{}` + strings.Repeat(`}`, 64) + `}`, "payload"},
	} {
		code, body := g.rest(t, "/api/queues/q/todos", c.body)
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", name, body)
		var st struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Details []struct {
				FieldViolations []struct {
					Field string `json:"field"`
				} `json:"field_violations"`
			} `json:"details"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &st), name)
		require.Equal(t, int(codes.InvalidArgument), st.Code, name)
		if c.field != "" {
			require.Len(t, st.Details, 1, name)
			require.Len(t, st.Details[0].FieldViolations, 1, name)
			require.Equal(t, c.field, st.Details[0].FieldViolations[0].Field, name)
		}
	}
	require.Zero(t, g.todos(t), "nothing stored")
}
