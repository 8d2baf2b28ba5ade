//go:build integration

package cluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/cluster"
	"github.com/switchboard/switchboard/pkg/pgtest"
)

// The metrics' hooks: every sweep with its evictions, and every
// re-registration after the table was reset.
func TestHooksReportSweepsAndReregistrations(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	var mu sync.Mutex
	var sweeps []int
	reregistered := 0
	a := cluster.NewMember(zap.NewNop(), pool, cluster.Options{
		NodeID: "a", Endpoint: "a:9090", Version: "test", Interval: manual, StaleThreshold: 3 * manual,
		OnSweep: func(n int) {
			mu.Lock()
			defer mu.Unlock()
			sweeps = append(sweeps, n)
		},
		OnReregister: func() {
			mu.Lock()
			defer mu.Unlock()
			reregistered++
		},
	})
	require.NoError(t, a.Start(t.Context()))
	t.Cleanup(func() { _ = a.Stop(context.Background()) })
	newMember(t, pool, "b", manual)
	age(t, pool, "b", 5*time.Hour)

	require.NoError(t, a.Tick(t.Context()))
	require.NoError(t, a.Tick(t.Context()))
	a.PretendServerStartedAt(time.Unix(0, 0))
	_, err := pool.Exec(t.Context(), "TRUNCATE node_registry")
	require.NoError(t, err)
	require.NoError(t, a.Tick(t.Context())) // re-registers; sweeps next tick

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int{1, 0}, sweeps, "b evicted by the first sweep; nothing left for the second")
	require.Equal(t, 1, reregistered)
}
