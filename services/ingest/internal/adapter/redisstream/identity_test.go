//go:build integration

package redisstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
)

// serverLog records what OnServer was told, and answers with refuse.
type serverLog struct {
	mu     sync.Mutex
	seen   []Server
	refuse error
}

func (l *serverLog) check(_ context.Context, s Server) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, s)
	return l.refuse
}

func (l *serverLog) servers() []Server {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Server(nil), l.seen...)
}

// TestServerCheckedBeforeReading: each new connection tells OnServer the
// server's run_id and the address dialed before the adapter uses it, and a
// probe of the same addr reaches the same run_id.
func TestServerCheckedBeforeReading(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	cfg := testConfig(t, rdb)
	var servers serverLog
	cfg.OnServer = servers.check
	sink := newSink()
	addEntries(t, rdb, cfg.Stream, "a", "b")
	start(t, cfg, sink)
	require.Eventually(t, func() bool { return sink.storedCount() == 2 }, waitFor, tick)

	seen := servers.servers()
	require.NotEmpty(t, seen)
	require.Len(t, seen[0].RunID, 40)
	require.Equal(t, redisAddr, seen[0].Addr.String())
	probed, err := Probe(t.Context(), redisAddr, "", allowRedis.DialContext)
	require.NoError(t, err)
	require.Equal(t, seen[0], probed)
}

// TestServerRefusedReadsNothing: a connection OnServer refuses serves no
// command: the group is never created, no entry is read or stored, and
// the adapter's status says why (the words of adapter.ErrSourceTaken).
func TestServerRefusedReadsNothing(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	cfg := testConfig(t, rdb)
	servers := serverLog{refuse: fmt.Errorf("claim: %w", adapter.ErrSourceTaken)}
	cfg.OnServer = servers.check
	var log statusLog
	cfg.OnStatus = log.record
	sink := newSink()
	addEntries(t, rdb, cfg.Stream, "a")
	start(t, cfg, sink)

	want := "refused: another owner's adapter already reads this Redis stream (server, db and stream); this adapter reads nothing from it"
	require.Eventually(t, func() bool { r, _ := log.last(); return r == want }, waitFor, tick)
	groups, err := rdb.XInfoGroups(t.Context(), cfg.Stream).Result()
	require.NoError(t, err)
	require.Empty(t, groups, "no command ran on the refused connection")
	require.Zero(t, sink.storedCount())
}

// TestServerCheckFailureReason: a check that fails for another reason (the
// database down) is reported as the check's step, not as the command that
// wanted the connection.
func TestServerCheckFailureReason(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	cfg := testConfig(t, rdb)
	servers := serverLog{refuse: fmt.Errorf("%w: %w", adapter.ErrSinkUnavailable, errors.New("connection refused"))}
	cfg.OnServer = servers.check
	var log statusLog
	cfg.OnStatus = log.record
	start(t, cfg, newSink())
	want := "check who reads this stream: the database is unavailable, retrying"
	require.Eventually(t, func() bool { r, _ := log.last(); return r == want }, waitFor, tick)
}

// TestProbeUnreachable: a probe of an address nothing listens on fails
// once, quickly, and leaves nothing running (goleak checks at exit).
func TestProbeUnreachable(t *testing.T) {
	t.Parallel()
	closed := adapter.NewAllowlist([]adapter.AllowRule{{Prefix: mustPrefix("127.0.0.1/32")}}, nil)
	_, err := Probe(t.Context(), "127.0.0.1:1", "", closed.DialContext)
	require.ErrorContains(t, err, "connection refused")
	_, err = Probe(t.Context(), "127.0.0.1:6379", "", allowRedis.DialContext)
	require.NoError(t, err)
}
