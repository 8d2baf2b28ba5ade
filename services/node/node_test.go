//go:build integration

package node_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/node"
)

type testBundle struct {
	node  *node.Node
	conn  *grpc.ClientConn
	stop  func() error // cancels the node and returns Run's result
	db    string
	token string // the bootstrap administrator's admin token
	// ran says whether the node's Run has returned, and with what: a test
	// that waits on a node says so when it fails.
	ran func() (bool, error)
}

// health fetches GET /health and returns the HTTP status and body status.
func (b *testBundle) health(t *testing.T) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+b.node.HTTPAddr()+"/health", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return resp.StatusCode, body.Status
}

func grpcServing(t *testing.T, conn *grpc.ClientConn) bool {
	t.Helper()
	resp, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{})
	return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
}

func setup(t *testing.T, services string) *testBundle {
	t.Helper()
	return setupDB(t, services, pgtest.NewDatabase(t))
}

func setupDB(t *testing.T, services, dbURL string) *testBundle {
	t.Helper()
	return setupFull(t, services, dbURL, func(*config.Config) {})
}

// setupWith runs a node on a fresh database with cfg adjusted by tweak.
func setupWith(t *testing.T, services string, tweak func(*config.Config)) *testBundle {
	t.Helper()
	return setupFull(t, services, pgtest.NewDatabase(t), tweak)
}

func setupFull(t *testing.T, services, dbURL string, tweak func(*config.Config), opts ...node.Option) *testBundle {
	t.Helper()
	cfg := config.Default()
	cfg.Cluster.NodeID = "test-node" // a tweak may name it otherwise (two nodes on one database)
	// Pools of a test's size: the server's connections are shared with
	// the tests running in parallel (pgtest.NodeURL).
	cfg.Postgres.URL = pgtest.NodeURL(dbURL)
	// Fast heartbeats, but a tolerant threshold: on a loaded CI machine a
	// node can miss half a second of them, and a peer on the same database
	// would then evict it and end its Run (TestTraceFollowsAWebhookToIts…
	// failed that way). No test here relies on a quick eviction.
	cfg.Cluster.HeartbeatInterval, cfg.Cluster.StaleThreshold = 100*time.Millisecond, 10*time.Second
	token, _, err := auth.NewToken()
	require.NoError(t, err)
	cfg.Auth.BootstrapToken = token
	tweak(&cfg)
	cfg.GRPC.Addr, cfg.HTTP.Addr, cfg.Cluster.Endpoint = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.Shutdown.Grace = 5 * time.Second
	svcs, err := node.ParseServices(services)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	n, err := node.New(ctx, cfg, zap.NewNop(), svcs, opts...)
	require.NoError(t, err)
	ended := make(chan struct{})
	var runErr error
	go func() { runErr = n.Run(ctx); close(ended) }()
	ran := func() (bool, error) {
		select {
		case <-ended:
			return true, runErr
		default:
			return false, nil
		}
	}
	var (
		once    sync.Once
		stopErr error
	)
	// A safety net against a hang: the node's own bound (delay and grace)
	// plus far more than a stop takes on a loaded machine.
	stopLimit := cfg.Shutdown.Delay + cfg.Shutdown.Grace + time.Minute
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case <-ended:
				stopErr = runErr
			case <-time.After(stopLimit):
				t.Errorf("node did not stop within %s", stopLimit)
			}
		})
		return stopErr
	}
	t.Cleanup(func() { _ = stop() })

	conn, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(auth.Bearer{Token: token, AllowInsecure: true}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	waitServing(t, conn)
	return &testBundle{node: n, conn: conn, stop: stop, db: dbURL, token: token, ran: ran}
}

func waitServing(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	hc := healthpb.NewHealthClient(conn)
	require.Eventually(t, func() bool {
		resp, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{})
		return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
	}, 30*time.Second, 20*time.Millisecond, "node never reported SERVING")
}

func listServices(t *testing.T, conn *grpc.ClientConn) []string {
	t.Helper()
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(t.Context())
	require.NoError(t, err)
	require.NoError(t, stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	}))
	resp, err := stream.Recv()
	require.NoError(t, err)
	require.NoError(t, stream.CloseSend())
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	sort.Strings(names)
	return names
}

func TestServeAllExposesEveryService(t *testing.T) {
	t.Parallel()
	b := setup(t, "all")
	require.Equal(t, []string{
		"grpc.health.v1.Health",
		"grpc.reflection.v1.ServerReflection",
		"grpc.reflection.v1alpha.ServerReflection",
		"switchboard.admin.v1.AdminService",
		"switchboard.ingest.v1.IngestService",
		"switchboard.queue.v1.QueueService",
		"switchboard.realtime.v1.RealtimeService",
		"switchboard.registry.v1.RegistryService",
	}, listServices(t, b.conn))

	hc := healthpb.NewHealthClient(b.conn)
	for _, svc := range []string{"switchboard.queue.v1.QueueService", "switchboard.registry.v1.RegistryService"} {
		resp, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{Service: svc})
		require.NoError(t, err)
		require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus(), svc)
	}
}

func TestSubsetRegistersOnlyThoseServices(t *testing.T) {
	t.Parallel()
	b := setup(t, "queue")
	names := listServices(t, b.conn)
	require.Contains(t, names, "switchboard.queue.v1.QueueService")
	require.NotContains(t, names, "switchboard.ingest.v1.IngestService")
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+b.node.HTTPAddr()+"/health", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "the HTTP listener is up even without the gateway")
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "no gateway routes on a queue-only node")
}

// steadyHeartbeat is the registry timing of the tests that need the node
// healthy: healthy needs the last heartbeat under 2 intervals old, which the
// tests' usual 100 ms interval misses whenever a loaded machine delays one
// by 200 ms; at 1 s it takes a heartbeat 2 s late.
func steadyHeartbeat(cfg *config.Config) {
	cfg.Cluster.HeartbeatInterval, cfg.Cluster.StaleThreshold = time.Second, 5*time.Second
}

// TestHealthOverTheGatewayIsJSON checks the shape of GET /health on a node
// that is healthy. Healthy is a condition, not a moment: it needs the last
// heartbeat to be under 2 intervals old, which a loaded machine can miss for
// a while (the node then rightly says "degraded"). So the test waits until
// the node reports healthy and checks that answer, with steadyHeartbeat so
// that the wait is short.
func TestHealthOverTheGatewayIsJSON(t *testing.T) {
	t.Parallel()
	b := setupWith(t, "all", steadyHeartbeat)
	type answer struct {
		code                 int
		contentType, request string
		body                 []byte
	}
	type healthBody struct {
		Status  string `json:"status"`
		NodeID  string `json:"node_id"`
		Cluster struct {
			Size           *int     `json:"size"`
			Peers          []string `json:"peers"`
			HeartbeatAgeMs *int     `json:"heartbeat_age_ms"`
		} `json:"cluster"`
	}
	get := func() (answer, error) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+b.node.HTTPAddr()+"/health", nil)
		if err != nil {
			return answer{}, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return answer{}, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("X-Request-Id"), body}, err
	}
	var (
		last   answer
		health healthBody
	)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		a, err := get()
		if !assert.NoError(c, err) {
			return
		}
		var h healthBody
		if !assert.NoError(c, json.Unmarshal(a.body, &h), "%d %s", a.code, a.body) ||
			!assert.Equal(c, "healthy", h.Status, "healthy once the heartbeat is current: %d %s", a.code, a.body) {
			return
		}
		last, health = a, h
	}, 30*time.Second, 20*time.Millisecond, "the node never reported healthy")

	require.Equal(t, http.StatusOK, last.code)
	require.Contains(t, last.contentType, "application/json")
	require.NotEmpty(t, last.request)
	body := last.body
	require.Equal(t, "healthy", health.Status)
	require.Equal(t, "test-node", health.NodeID)
	require.NotNil(t, health.Cluster.Size, "size is a JSON number: %s", body)
	require.Equal(t, 1, *health.Cluster.Size, "a single node is a cluster of one")
	require.Empty(t, health.Cluster.Peers)
	require.NotNil(t, health.Cluster.HeartbeatAgeMs, "heartbeat_age_ms is a JSON number: %s", body)
	require.NotNil(t, health.Cluster.Peers, "peers is a list, even when empty: %s", body)
}

// A schema this binary was not built for makes the node unhealthy: HTTP 503
// and NOT_SERVING, until the schema is right again.
func TestSchemaMismatchIsUnhealthy(t *testing.T) {
	t.Parallel()
	b := setupWith(t, "all", steadyHeartbeat) // it ends by waiting for healthy
	pool, err := pgxpool.New(t.Context(), b.db)
	require.NoError(t, err)
	defer pool.Close()
	_, err = pool.Exec(t.Context(), "INSERT INTO goose_db_version (version_id, is_applied) VALUES (99999, true)")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		code, status := b.health(t)
		return code == http.StatusServiceUnavailable && status == "unhealthy" && !grpcServing(t, b.conn)
	}, time.Minute, 20*time.Millisecond)

	_, err = pool.Exec(t.Context(), "DELETE FROM goose_db_version WHERE version_id = 99999")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		code, status := b.health(t)
		return code == http.StatusOK && status == "healthy" && grpcServing(t, b.conn)
	}, time.Minute, 20*time.Millisecond)
}

// Losing Postgres degrades a node; it does not take it down: it keeps
// answering (HTTP 200, SERVING) and does not exit.
func TestLostDatabaseIsDegradedAndKeepsServing(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	b := setupDB(t, "all", db)
	admin, err := pgxpool.New(t.Context(), pgtest.AdminURL())
	require.NoError(t, err)
	defer admin.Close()
	name := db[strings.LastIndex(db, "/")+1:]
	name = name[:strings.IndexByte(name+"?", '?')]
	_, err = admin.Exec(t.Context(), "DROP DATABASE "+name+" WITH (FORCE)")
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		code, status := b.health(t)
		return code == http.StatusOK && status == "degraded"
	}, time.Minute, 20*time.Millisecond)
	require.True(t, grpcServing(t, b.conn), "degraded still serves")
}

// A node whose own registry row is gone is not healthy, however recent its
// last heartbeat: a peer swept it (it was paused past the stale threshold and
// resumed mid-heartbeat), or Postgres restarted. Its next tick exits or
// re-registers; until then GET /health says degraded. It once said healthy in
// that window, and a chaos test took a node about to exit for one that had
// re-registered in place.
func TestHealthIsDegradedWhileTheNodesRowIsGone(t *testing.T) {
	t.Parallel()
	// A minute between heartbeats: the node neither notices the missing row
	// nor turns degraded for a late heartbeat while the test asks.
	b := setupWith(t, "all", func(cfg *config.Config) {
		cfg.Cluster.HeartbeatInterval, cfg.Cluster.StaleThreshold = time.Minute, 5*time.Minute
	})
	require.Eventually(t, func() bool {
		code, status := b.health(t)
		return code == http.StatusOK && status == "healthy"
	}, 30*time.Second, 20*time.Millisecond, "the node never reported healthy")

	pool, err := pgxpool.New(t.Context(), b.db)
	require.NoError(t, err)
	defer pool.Close()
	tag, err := pool.Exec(t.Context(), "DELETE FROM node_registry WHERE node_id = 'test-node'")
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())

	code, status := b.health(t)
	require.Equal(t, http.StatusOK, code, "degraded still serves")
	require.Equal(t, "degraded", status)
	ended, _ := b.ran()
	require.False(t, ended, "no heartbeat ran yet, so the node has not exited")
}

// Requests are validated against the contract's rules before any handler
// runs, so even an RPC that is not built yet rejects bad input precisely.
func TestBadRequestsAreRejectedBeforeTheHandler(t *testing.T) {
	t.Parallel()
	b := setup(t, "all")
	_, err := queuev1.NewQueueServiceClient(b.conn).Enqueue(t.Context(), &queuev1.EnqueueRequest{
		Queue: "Not A Queue!", Priority: proto.Int32(7),
	})
	st := status.Convert(err)
	require.Equal(t, codes.InvalidArgument, st.Code())
	var fields []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				fields = append(fields, v.GetField())
			}
		}
	}
	require.ElementsMatch(t, []string{"queue", "priority"}, fields)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost,
		"http://"+b.node.HTTPAddr()+"/api/queues/Bad!/todos", strings.NewReader(`{"priority": 9}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

func TestCancelStopsCleanlyAndClosesListeners(t *testing.T) {
	t.Parallel()
	b := setup(t, "all")
	require.NoError(t, b.stop())
	_, err := healthpb.NewHealthClient(b.conn).Check(t.Context(), &healthpb.HealthCheckRequest{})
	require.Equal(t, codes.Unavailable, status.Code(err))
}
