package node

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/config"
)

// TestPlanBuildsDependenciesFirst: a node builds what its services need and
// nothing else, each dependency (and each optional collaborator it runs)
// before the module that uses it.
func TestPlanBuildsDependenciesFirst(t *testing.T) {
	t.Parallel()
	order, err := plan([]string{"registry"})
	require.NoError(t, err)
	require.Equal(t, []string{modCore, "registry"}, order, "no notifier or todo writer for a registry-only node")

	order, err = plan([]string{"ingest"})
	require.NoError(t, err)
	require.Equal(t, []string{modCore, modNotifier, modLifecycleEvents, modSources, modTodos, "ingest"}, order)

	order, err = plan([]string{"queue", "realtime"})
	require.NoError(t, err)
	require.Equal(t, []string{modCore, modNotifier, "realtime", modLifecycleEvents, modTodos, "queue"}, order,
		"lifecycle events go through the node's realtime service, built first")

	order, err = plan(All)
	require.NoError(t, err)
	require.ElementsMatch(t, append(slices.Clone(All), modCore, modNotifier, modTodos, modSources, modLifecycleEvents), order)
	for i, name := range order {
		m := modules[name]
		for _, d := range append(slices.Clone(m.deps), m.after...) {
			require.Less(t, slices.Index(order, d), i, "%s is built before %s", d, name)
		}
	}

	_, err = plan([]string{"billing"})
	require.ErrorContains(t, err, `unknown module "billing"`)
}

// TestModuleTable: every dependency names a module, and only services are
// selectable.
func TestModuleTable(t *testing.T) {
	t.Parallel()
	for name, m := range modules {
		for _, d := range append(slices.Clone(m.deps), m.after...) {
			require.Contains(t, modules, d, "%s depends on %s", name, d)
		}
		require.NotNil(t, m.build, name)
	}
	for _, internal := range []string{modCore, modNotifier, modTodos, modSources, modLifecycleEvents} {
		_, err := ParseServices(internal)
		require.Error(t, err, "%s is not a service", internal)
	}
}

// TestShutdownOrder: the node's lifecycle stops in the order the
// choreography needs — health first (drain: NOT_SERVING, the delay, then
// streams and long polls end), the edges' in-flight requests next, then the
// background loops (notifier last among them), then readiness, membership
// (deregistration), the token cache's stream checks and refreshes, the pools
// and last tracing. Building a node needs no database.
func TestShutdownOrder(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Postgres.URL = "postgres://postgres@127.0.0.1:1/none?sslmode=disable"
	cfg.GRPC.Addr, cfg.HTTP.Addr, cfg.Cluster.Endpoint = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.Cluster.NodeID = "order-node"
	n, err := New(t.Context(), cfg, zap.NewNop(), All)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 5*time.Second)
		defer cancel()
		for _, c := range slices.Backward(n.a.components()) {
			_ = c.Stop(ctx)
		}
	})

	var stop []string
	for _, c := range slices.Backward(n.a.components()) {
		stop = append(stop, c.Name())
	}
	at := func(name string) int {
		t.Helper()
		i := slices.Index(stop, name)
		require.GreaterOrEqual(t, i, 0, "%s is in the lifecycle: %v", name, stop)
		return i
	}
	require.Equal(t, []string{"drain", "http", "grpc-drain"}, stop[:3], "health, then the edges drain")
	require.Equal(t, []string{"readiness", "membership", "migrate", "grpc", "auth-streams", "auth-refresh", "postgres", "tracing"}, stop[len(stop)-8:],
		"deregistration, the streams' credential checks (which start refreshes), the token cache's refreshes "+
			"and the pools come last, and only then the spans' last export")
	background := stop[3 : len(stop)-8]
	require.Equal(t, "pgnotify", background[len(background)-1], "the notifier outlives every loop that uses it: %v", background)
	for _, loop := range []string{"queue-reaper", "queue-retention", "ingest-retention", "realtime-retention"} {
		require.Contains(t, background, loop)
	}
	require.Less(t, at("grpc-drain"), at("queue-complete-merger"), "merged Completes flush after the RPCs drained")
}

// TestQueueOnlyNodeRunsTheLifecyclePublisher: a node with the queue and no
// realtime runs the publisher-only part (its refresh of the listened
// channels), stopped before the notifier it sends through.
func TestQueueOnlyNodeRunsTheLifecyclePublisher(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Postgres.URL = "postgres://postgres@127.0.0.1:1/none?sslmode=disable"
	cfg.GRPC.Addr, cfg.HTTP.Addr, cfg.Cluster.Endpoint = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	n, err := New(t.Context(), cfg, zap.NewNop(), []string{"queue"})
	require.NoError(t, err)
	var stop []string
	for _, c := range slices.Backward(n.a.components()) {
		stop = append(stop, c.Name())
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 5*time.Second)
		defer cancel()
		for _, c := range slices.Backward(n.a.components()) {
			_ = c.Stop(ctx)
		}
	})
	publisher, notifier := slices.Index(stop, "realtime-system-listened"), slices.Index(stop, "pgnotify")
	require.GreaterOrEqual(t, publisher, 0, "the publisher runs: %v", stop)
	require.Less(t, publisher, notifier, "and stops before the notifier: %v", stop)
	require.Nil(t, n.a.events.server)
	require.NotNil(t, n.a.events.publisher)
}
