//go:build integration

package mesh_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	meshv1 "github.com/switchboard/switchboard/gen/switchboard/mesh/v1"
	"github.com/switchboard/switchboard/pkg/grpcserver"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/realtime/internal/mesh"
	"github.com/switchboard/switchboard/services/realtime/internal/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(pgtest.Tests(m)) }

// waitFor bounds every wait on a condition: long, so a loaded machine does
// not fail the tests; the conditions usually hold within milliseconds.
const waitFor = 60 * time.Second

var (
	secret = []byte("mesh test cluster secret, 32+ bytes long")
	human  = uuid.MustParse("7b0c1c2e-5f43-4a8e-9d55-2a3b4c5d6e7f")
)

// inbox records what a node's Deliver got. With a gate, Deliver waits for
// the gate to close first: a receiver that has stopped reading.
type inbox struct {
	gate   chan struct{}
	mu     sync.Mutex
	events []wire.Ephemeral
}

func (b *inbox) deliver(e wire.Ephemeral) {
	if b.gate != nil {
		<-b.gate
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events = append(b.events, e)
}

// where returns the events that match.
func (b *inbox) where(match func(wire.Ephemeral) bool) []wire.Ephemeral {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []wire.Ephemeral
	for _, e := range b.events {
		if match(e) {
			out = append(out, e)
		}
	}
	return out
}

func (b *inbox) from(origin string) []wire.Ephemeral {
	return b.where(func(e wire.Ephemeral) bool { return e.Origin == origin })
}

func (b *inbox) on(channel string) []wire.Ephemeral {
	return b.where(func(e wire.Ephemeral) bool { return e.Channel == channel })
}

// testBundle is one test's cluster: a migrated database of its own.
type testBundle struct {
	pool *pgxpool.Pool
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	return &testBundle{pool: pgtest.NewPool(t)}
}

// nodeConfig varies a node: its listen address ("127.0.0.1:0" when empty),
// its per-peer queue, and a gate for its Deliver.
type nodeConfig struct {
	addr      string
	queueSize int
	gate      chan struct{}
	// TLS: the server's config, the links' dial options, and whether the
	// mesh requires a client certificate (tls_test.go).
	serverTLS         *tls.Config
	dial              []grpc.DialOption
	requireClientCert bool
}

// node is one Switchboard node as far as the mesh is concerned: a Mesh on
// its own real gRPC server (the node's interceptor chain, no token auth),
// with a registry row saying it runs realtime.
type node struct {
	id    string
	addr  string
	mesh  *mesh.Mesh
	srv   *grpcserver.Server
	inbox *inbox
	once  sync.Once
}

func (tb *testBundle) startNode(t *testing.T, id string, cfg nodeConfig) *node {
	t.Helper()
	if cfg.addr == "" {
		cfg.addr = "127.0.0.1:0"
	}
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)).With(zap.String("node", id))
	n := &node{id: id, inbox: &inbox{gate: cfg.gate}}
	m, err := mesh.New(mesh.Options{
		NodeID: id, Secret: secret, Pool: tb.pool, Log: log, Deliver: n.inbox.deliver,
		RefreshInterval: 20 * time.Millisecond, QueueSize: cfg.queueSize,
		DialOptions: cfg.dial, RequireClientCert: cfg.requireClientCert,
	})
	require.NoError(t, err)
	srv, err := grpcserver.New(t.Context(), log, grpcserver.Options{Addr: cfg.addr, TLS: cfg.serverTLS})
	require.NoError(t, err)
	srv.Register(m.Desc(), m)
	n.mesh, n.srv, n.addr = m, srv, srv.Addr()
	require.NoError(t, srv.Start(t.Context()))
	require.NoError(t, m.Start(t.Context()))
	t.Cleanup(func() { n.stop(t) })
	tb.register(t, id, n.addr, "realtime", "queue")
	return n
}

// stop is the node's shutdown order: the gRPC server (ending inbound
// links), then the mesh (closing outgoing ones). Idempotent.
func (n *node) stop(t *testing.T) {
	t.Helper()
	n.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), waitFor)
		defer cancel()
		require.NoError(t, n.srv.Stop(ctx))
		require.NoError(t, n.mesh.Stop(ctx))
	})
}

// register writes id's registry row as pkg/cluster would: stats carry the
// sorted list of services under "services".
func (tb *testBundle) register(t *testing.T, id, endpoint string, services ...string) {
	t.Helper()
	slices.Sort(services)
	stats, err := json.Marshal(map[string]any{"services": services, "version": "test"})
	require.NoError(t, err)
	tb.registerRaw(t, id, endpoint, stats)
}

func (tb *testBundle) registerRaw(t *testing.T, id, endpoint string, stats []byte) {
	t.Helper()
	_, err := tb.pool.Exec(t.Context(), `
		INSERT INTO node_registry (node_id, endpoint, stats) VALUES ($1, $2, $3)
		ON CONFLICT (node_id) DO UPDATE SET endpoint = EXCLUDED.endpoint, stats = EXCLUDED.stats, heartbeat = now()`,
		id, endpoint, stats)
	require.NoError(t, err)
}

func (tb *testBundle) deregister(t *testing.T, id string) {
	t.Helper()
	_, err := tb.pool.Exec(t.Context(), `DELETE FROM node_registry WHERE node_id = $1`, id)
	require.NoError(t, err)
}

// waitPeers waits until n has live links to exactly want.
func waitPeers(t *testing.T, n *node, want ...string) {
	t.Helper()
	slices.Sort(want)
	require.Eventually(t, func() bool { return slices.Equal(n.mesh.Peers(), want) }, waitFor, 5*time.Millisecond,
		"%s never had links to exactly %v", n.id, want)
}

func event(channel string, seq int) wire.Ephemeral {
	return wire.Ephemeral{
		HumanID:     human,
		Channel:     channel,
		Kind:        "typing",
		Payload:     json.RawMessage(fmt.Sprintf(`{"seq": %d}`, seq)),
		PublishedBy: "agent:" + uuid.NewString(),
		CreatedAt:   time.Now(),
	}
}

// rawClient is a MeshService client that is not a Mesh: for the tests that
// play a misbehaving or unauthorized dialer.
func rawClient(t *testing.T, addr string) meshv1.MeshServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return meshv1.NewMeshServiceClient(conn)
}
