//go:build integration

package redisstream

import (
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
)

// statusLog records what OnStatus was told.
type statusLog struct {
	mu      sync.Mutex
	reasons []string
}

func (l *statusLog) record(reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reasons = append(l.reasons, reason)
}

func (l *statusLog) last() (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.reasons) == 0 {
		return "", false
	}
	return l.reasons[len(l.reasons)-1], true
}

// TestDialRefusedByAllowList: an adapter whose address the allow list does
// not allow never reaches the server (its group is never created) and
// reports why.
func TestDialRefusedByAllowList(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	cfg := testConfig(t, rdb)
	everyPublic := adapter.NewAllowlist([]adapter.AllowRule{{Prefix: mustPrefix("0.0.0.0/0")}}, nil)
	cfg.Dialer = everyPublic.DialContext
	var log statusLog
	cfg.OnStatus = log.record
	addEntries(t, rdb, cfg.Stream, "a")
	start(t, cfg, newSink())

	want := "dial 127.0.0.1:6379: refused by SWITCHBOARD_ADAPTER_ALLOW (loopback)"
	require.Eventually(t, func() bool { r, _ := log.last(); return r == want }, waitFor, tick)
	groups, err := rdb.XInfoGroups(t.Context(), cfg.Stream).Result()
	require.NoError(t, err)
	require.Empty(t, groups, "the adapter never reached Redis")
}

// TestStatusSetAndCleared: a failing step reports the server's reason; the
// first step that works after it reports "" (healthy).
func TestStatusSetAndCleared(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	cfg := testConfig(t, rdb)
	require.NoError(t, rdb.Set(t.Context(), cfg.Stream, "not a stream", 0).Err())
	var log statusLog
	cfg.OnStatus = log.record
	sink := newSink()
	start(t, cfg, sink)

	want := "create consumer group: WRONGTYPE Operation against a key holding the wrong kind of value"
	require.Eventually(t, func() bool { r, _ := log.last(); return r == want }, waitFor, tick)
	require.NoError(t, rdb.Del(t.Context(), cfg.Stream).Err())
	require.Eventually(t, func() bool { r, ok := log.last(); return ok && r == "" }, waitFor, tick)
	addEntries(t, rdb, cfg.Stream, "a")
	require.Eventually(t, func() bool { return sink.storedCount() == 1 }, waitFor, tick)
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }
