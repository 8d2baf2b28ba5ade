//go:build integration

package mesh

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/realtime/internal/wire"
)

// The registry query dials only the other nodes whose stats say they run
// realtime. Tested on the query itself because "never dialed" cannot be
// observed from outside without waiting for something not to happen.
func TestPeersQueryReadsOnlyOtherRealtimeNodes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	rows := map[string]*string{ // node id → stats (nil: SQL NULL)
		"self":          ptr(`{"services": ["realtime"]}`),
		"rt":            ptr(`{"services": ["realtime"], "version": "v1"}`),
		"rt-and-more":   ptr(`{"services": ["gateway", "queue", "realtime"]}`),
		"queue-only":    ptr(`{"services": ["queue"]}`),
		"no-services":   ptr(`{"version": "v1"}`),
		"empty-stats":   ptr(`{}`),
		"null-stats":    nil,
		"services-text": ptr(`{"services": "realtime"}`),
	}
	for id, stats := range rows {
		_, err := pool.Exec(t.Context(), `INSERT INTO node_registry (node_id, endpoint, stats) VALUES ($1, $2, $3::jsonb)`,
			id, id+":9090", stats)
		require.NoError(t, err)
	}
	m, err := New(Options{NodeID: "self", Secret: testSecret, Pool: pool, Deliver: func(wire.Ephemeral) {}})
	require.NoError(t, err)

	got, err := m.readPeers(t.Context())
	require.NoError(t, err)
	require.Equal(t, map[string]string{"rt": "rt:9090", "rt-and-more": "rt-and-more:9090"}, got)
}

func ptr(s string) *string { return &s }

var testSecret = []byte("internal test cluster secret, 32+ bytes")

// Stop does not wait for a link that is still dialing an unreachable peer:
// there is nothing to flush, and waiting would hold every shutdown for its
// whole grace period. (Were it to wait, Stop would return DeadlineExceeded.)
func TestStopAbandonsDialsToUnreachablePeers(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	lis, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gone := lis.Addr().String()
	require.NoError(t, lis.Close()) // nobody answers there any more
	_, err = pool.Exec(t.Context(), `INSERT INTO node_registry (node_id, endpoint, stats) VALUES ('ghost', $1, '{"services": ["realtime"]}')`, gone)
	require.NoError(t, err)

	m, err := New(Options{NodeID: "self", Secret: testSecret, Pool: pool, Deliver: func(wire.Ephemeral) {},
		RefreshInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, m.Start(t.Context()))
	require.Eventually(t, func() bool {
		m.mu.RLock()
		defer m.mu.RUnlock()
		return m.peers["ghost"] != nil
	}, time.Minute, 5*time.Millisecond)
	require.Empty(t, m.Peers(), "no live link to a peer that is not there")

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	require.NoError(t, m.Stop(ctx))
}
