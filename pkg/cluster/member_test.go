//go:build integration

package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/cluster"
	"github.com/switchboard/switchboard/pkg/pgtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(pgtest.Tests(m)) }

// manual is an interval long enough that the loop never ticks by itself:
// tests drive heartbeats with Tick.
const manual = time.Hour

func newMember(t *testing.T, pool *pgxpool.Pool, id string, interval time.Duration) *cluster.Member {
	t.Helper()
	m := cluster.NewMember(zap.NewNop(), pool, cluster.Options{
		NodeID: id, Endpoint: id + ":9090", Services: []string{"queue", "gateway"}, Version: "test",
		Interval: interval, StaleThreshold: 3 * interval,
		Stats: func() map[string]any { return map[string]any{"open_streams": 2} },
	})
	require.NoError(t, m.Start(t.Context()))
	t.Cleanup(func() { _ = m.Stop(context.Background()) })
	return m
}

func ids(t *testing.T, s *cluster.Store) []string {
	t.Helper()
	nodes, err := s.List(t.Context())
	require.NoError(t, err)
	out := []string{}
	for _, n := range nodes {
		out = append(out, n.NodeID)
	}
	return out
}

func age(t *testing.T, pool *pgxpool.Pool, id string, by time.Duration) {
	t.Helper()
	_, err := pool.Exec(t.Context(), "UPDATE node_registry SET heartbeat = now() - $2::interval WHERE node_id = $1",
		id, by.String())
	require.NoError(t, err)
}

func TestRegisterPublishesServicesAndStats(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	m := newMember(t, pool, "a", manual)
	require.Equal(t, cluster.Healthy, m.Status())

	nodes, err := cluster.NewStore(pool).List(t.Context())
	require.NoError(t, err)
	require.Len(t, nodes, 1)
	n := nodes[0]
	require.Equal(t, "a:9090", n.Endpoint)
	require.Equal(t, []string{"gateway", "queue"}, n.Services())
	for _, key := range []string{"goroutines", "heap_alloc", "heap_sys", "gc_cycles", "gc_pause_ns", "uptime_sec", "version", "open_streams"} {
		require.Contains(t, n.Stats, key)
	}
}

func TestRestartUnderTheSameIDReusesTheRow(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	first := newMember(t, pool, "a", manual)
	require.NoError(t, first.Stop(t.Context()))
	require.Empty(t, ids(t, cluster.NewStore(pool)), "stop deregisters")
	newMember(t, pool, "a", manual)
	newMember(t, pool, "a", manual) // a crash-restart: no deregister in between
	require.Equal(t, []string{"a"}, ids(t, cluster.NewStore(pool)), "no orphan rows")
}

func TestSweepEvictsStalePeersAndTheEvictedNodeExits(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	store := cluster.NewStore(pool)
	a := newMember(t, pool, "a", manual)
	b := newMember(t, pool, "b", manual)
	age(t, pool, "b", 5*time.Hour) // b stopped beating long ago

	require.NoError(t, a.Tick(t.Context()))
	require.Equal(t, []string{"a"}, ids(t, store))

	require.ErrorIs(t, b.Tick(t.Context()), cluster.ErrEvicted)
	require.Equal(t, cluster.Unhealthy, b.Status())
}

func TestEvictionReachesFailedFromTheLoop(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	b := newMember(t, pool, "b", 20*time.Millisecond)
	_, err := pool.Exec(t.Context(), "DELETE FROM node_registry WHERE node_id = 'b'") // a peer's sweep
	require.NoError(t, err)
	select {
	case err := <-b.Failed():
		require.ErrorIs(t, err, cluster.ErrEvicted)
	case <-time.After(time.Minute):
		t.Fatal("eviction was not reported")
	}
}

// A Postgres restart empties the UNLOGGED table for everyone: that is not an
// eviction, and the node re-registers in place instead of exiting.
func TestResetTableAfterPostgresRestartReRegisters(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	a := newMember(t, pool, "a", manual)
	a.PretendServerStartedAt(time.Unix(0, 0))
	_, err := pool.Exec(t.Context(), "TRUNCATE node_registry")
	require.NoError(t, err)

	require.NoError(t, a.Tick(t.Context()))
	require.Equal(t, []string{"a"}, ids(t, cluster.NewStore(pool)))
	require.Equal(t, cluster.Healthy, a.Status())
}

// After a pause (or an outage) our own heartbeat is late: peers may only look
// stale because they could not beat either, so the first tick must not sweep.
func TestLateHeartbeatDoesNotSweep(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	store := cluster.NewStore(pool)
	a := newMember(t, pool, "a", time.Minute)
	newMember(t, pool, "b", time.Minute)
	age(t, pool, "b", time.Hour)
	a.PretendLastBeat(10 * time.Minute)
	require.Equal(t, cluster.Degraded, a.Status(), "a late heartbeat is degraded")

	require.NoError(t, a.Tick(t.Context()))
	require.Equal(t, []string{"a", "b"}, ids(t, store), "no sweep on a late tick")
	require.NoError(t, a.Tick(t.Context()))
	require.Equal(t, []string{"a"}, ids(t, store), "the next, on-time tick sweeps")
}

func TestUnreachableDatabaseIsDegradedNotFatal(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	a := cluster.NewMember(zap.NewNop(), pool, cluster.Options{
		NodeID: "a", Endpoint: "a:1", Interval: manual, StaleThreshold: 3 * manual,
	})
	require.NoError(t, a.Start(t.Context()))
	pool.Close() // the database goes away
	err := a.Tick(t.Context())
	require.Error(t, err)
	require.NotErrorIs(t, err, cluster.ErrEvicted)
	require.Equal(t, cluster.Degraded, a.Status())
	require.NoError(t, a.Stop(t.Context()), "stop still works; deregistering fails quietly")
}

func TestWatchSendsSnapshotThenChanges(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	store := cluster.NewStore(pool)
	newMember(t, pool, "a", manual)

	events := make(chan cluster.Event, 16)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- store.Watch(ctx, 10*time.Millisecond, func(e cluster.Event) error {
			events <- e
			return nil
		})
	}()
	next := func() cluster.Event {
		select {
		case e := <-events:
			return e
		case <-time.After(time.Minute):
			t.Fatal("no event")
			return cluster.Event{}
		}
	}
	e := next()
	require.Equal(t, cluster.Joined, e.Type)
	require.Equal(t, "a", e.Node.NodeID)
	require.Equal(t, cluster.Synced, next().Type)

	b := newMember(t, pool, "b", manual)
	e = next()
	require.Equal(t, cluster.Joined, e.Type)
	require.Equal(t, "b", e.Node.NodeID)

	require.NoError(t, b.Tick(t.Context()))
	e = next()
	require.Equal(t, cluster.Updated, e.Type)
	require.Equal(t, "b", e.Node.NodeID)

	require.NoError(t, b.Stop(t.Context()))
	e = next()
	require.Equal(t, cluster.Left, e.Type)
	require.Equal(t, "b", e.Node.NodeID)

	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}
