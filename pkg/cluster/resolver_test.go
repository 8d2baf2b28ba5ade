//go:build integration

package cluster_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/switchboard/switchboard/pkg/cluster"
	"github.com/switchboard/switchboard/pkg/pgtest"
)

// counted is a gRPC server that counts the calls it answers.
type counted struct {
	addr  string
	calls atomic.Int64
}

func serveCounted(t *testing.T) *counted {
	t.Helper()
	c := &counted{}
	lis, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c.addr = lis.Addr().String()
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		c.calls.Add(1)
		return h(ctx, req)
	}))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return c
}

// register makes s a member running services.
func register(t *testing.T, pool *pgxpool.Pool, id, endpoint string, services ...string) *cluster.Member {
	t.Helper()
	m := cluster.NewMember(zap.NewNop(), pool, cluster.Options{
		NodeID: id, Endpoint: endpoint, Services: services, Version: "test",
		Interval: manual, StaleThreshold: 3 * manual,
	})
	require.NoError(t, m.Start(t.Context()))
	t.Cleanup(func() { _ = m.Stop(context.Background()) })
	return m
}

// TestResolverFollowsTheRegistry: a client of Target("queue") spreads its
// calls over every live node that runs the queue (and none that does not),
// follows a node leaving, and with none left fails at once with UNAVAILABLE
// naming the service.
func TestResolverFollowsTheRegistry(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	a, b, other := serveCounted(t), serveCounted(t), serveCounted(t)
	ma := register(t, pool, "a", a.addr, "queue")
	mb := register(t, pool, "b", b.addr, "queue", "ingest")
	register(t, pool, "c", other.addr, "realtime")

	dir := cluster.NewDirectory(zap.NewNop(), pool, 50*time.Millisecond)
	require.NoError(t, dir.Start(t.Context()))
	t.Cleanup(func() { _ = dir.Stop(context.Background()) })
	conn, err := grpc.NewClient(cluster.Target("queue"),
		append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dir.DialOptions("queue")...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	client := healthpb.NewHealthClient(conn)
	check := func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}

	// Round robin reaches both once both are connected.
	var lastErr error
	require.Eventually(t, func() bool {
		if lastErr = check(); lastErr != nil {
			return false
		}
		return a.calls.Load() > 0 && b.calls.Load() > 0
	}, 10*time.Second, time.Millisecond, "last error: %v", lastErr)
	require.Zero(t, other.calls.Load(), "a node without the queue gets none of its calls")

	// b leaves: within a watch interval or so, only a answers.
	require.NoError(t, mb.Stop(t.Context()))
	require.Eventually(t, func() bool {
		before := b.calls.Load()
		for range 5 {
			if lastErr = check(); lastErr != nil {
				return false
			}
		}
		return b.calls.Load() == before
	}, 10*time.Second, 20*time.Millisecond, "last error: %v", lastErr)

	// None left: the call fails at once, naming the service.
	require.NoError(t, ma.Stop(t.Context()))
	require.Eventually(t, func() bool { return len(dir.Running("queue")) == 0 }, 10*time.Second, 10*time.Millisecond)
	began := time.Now()
	err = check()
	require.Equal(t, codes.Unavailable, status.Code(err))
	require.Equal(t, "no live node runs queue", status.Convert(err).Message())
	require.Less(t, time.Since(began), time.Second, "failed fast, not at the deadline")
}

// TestDirectoryPublishesHTTPEndpoints: what a node publishes as
// http_endpoint is what the directory reports, and a change of it is seen.
func TestDirectoryPublishesHTTPEndpoints(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	addr := "10.0.0.1:8080"
	var current atomic.Value
	current.Store(addr)
	m := cluster.NewMember(zap.NewNop(), pool, cluster.Options{
		NodeID: "i", Endpoint: "10.0.0.1:9090", Services: []string{"ingest"}, Version: "test",
		Interval: manual, StaleThreshold: 3 * manual,
		Stats: func() map[string]any { return map[string]any{cluster.StatHTTPEndpoint: current.Load()} },
	})
	require.NoError(t, m.Start(t.Context()))
	t.Cleanup(func() { _ = m.Stop(context.Background()) })

	dir := cluster.NewDirectory(zap.NewNop(), pool, 50*time.Millisecond)
	require.NoError(t, dir.Start(t.Context()))
	t.Cleanup(func() { _ = dir.Stop(context.Background()) })
	changed := make(chan struct{}, 1)
	cancel := dir.OnChange(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	defer cancel()
	nodes := dir.Running("ingest")
	require.Len(t, nodes, 1)
	require.Equal(t, addr, nodes[0].HTTPEndpoint())

	current.Store("10.0.0.1:8443")
	require.NoError(t, m.Tick(t.Context()))
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the directory did not report the changed http_endpoint")
	}
	require.Equal(t, "10.0.0.1:8443", dir.Running("ingest")[0].HTTPEndpoint())
}

// TestDirectoryForgetsWhatARestartedWatchDoesNotList: after a database
// outage the watch starts over; a node its new snapshot does not list left
// meanwhile (its Left was never seen) and is dropped, while one that
// re-registered during normal watching does not count as listed.
func TestDirectoryForgetsWhatARestartedWatchDoesNotList(t *testing.T) {
	t.Parallel()
	dir := cluster.NewDirectory(zap.NewNop(), nil, time.Hour) // never started: fed by hand
	a, b := cluster.NodeWith("a", "a:9090", "queue"), cluster.NodeWith("b", "b:9090", "queue")
	dir.Rewatch(cluster.Event{Type: cluster.Joined, Node: a}, cluster.Event{Type: cluster.Joined, Node: b},
		cluster.Event{Type: cluster.Synced},
		cluster.Event{Type: cluster.Joined, Node: b}) // b re-registered (a new seq)
	require.Len(t, dir.Running("queue"), 2)

	dir.Rewatch(cluster.Event{Type: cluster.Joined, Node: a}, cluster.Event{Type: cluster.Synced})
	got := dir.Running("queue")
	require.Len(t, got, 1)
	require.Equal(t, "a", got[0].NodeID)
}
