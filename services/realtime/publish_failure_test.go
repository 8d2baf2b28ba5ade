//go:build integration

package realtime_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/realtime"
)

// TestBadEventInMergedPublishFailsOnlyItsCaller: a tenant deleted between
// its publish queuing and the flush makes the merged statement fail (a
// foreign-key violation); each event is then retried alone, so only that
// tenant's caller fails, with NOT_FOUND (its tenant is gone).
func TestBadEventInMergedPublishFailsOnlyItsCaller(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	gone := e.seedHuman()
	st := holdFirstStatement(t, e.srv)
	first := e.publishAsync(t.Context(), e.human, "first", map[string]any{"i": -1.0})
	st.held(t)
	a := e.publishAsync(t.Context(), e.human, "kept", map[string]any{"i": 0.0})
	e.queued(1)
	bad := e.publishAsync(t.Context(), gone, "lost", map[string]any{"i": 1.0})
	e.queued(2)
	b := e.publishAsync(t.Context(), e.human, "kept", map[string]any{"i": 2.0})
	e.queued(3)
	_, err := e.pool.Exec(t.Context(), `DELETE FROM humans WHERE id = $1`, gone)
	require.NoError(t, err)
	st.let()

	require.NoError(t, outcome(t, first).err)
	for i, ch := range map[float64]<-chan published{0: a, 2: b} {
		p := outcome(t, ch)
		require.NoError(t, p.err)
		channel, got := e.rowOf(p.resp.GetId())
		require.Equal(t, "kept", channel)
		require.InDelta(t, i, got, 0)
	}
	require.Equal(t, "NotFound", statusCode(outcome(t, bad).err), "its tenant is gone")
	require.Equal(t, []int{1, 3, 1, 1, 1}, st.seen(), "the merged statement, then each event alone")
	var lost int
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT count(*) FROM realtime_events WHERE channel = 'lost'`).Scan(&lost))
	require.Zero(t, lost)
}

// TestPublishCancelledBeforeItsFlushIsNotStored: a caller that gives up
// while its event is still queued gets CANCELED and its event is never
// sent; the event queued behind it is stored.
func TestPublishCancelledBeforeItsFlushIsNotStored(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	st := holdFirstStatement(t, e.srv)
	first := e.publishAsync(t.Context(), e.human, "first", map[string]any{"i": -1.0})
	st.held(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dropped := e.publishAsync(ctx, e.human, "dropped", map[string]any{"i": 0.0})
	e.queued(1)
	kept := e.publishAsync(t.Context(), e.human, "kept", map[string]any{"i": 1.0})
	e.queued(2)
	cancel()
	require.Equal(t, "Canceled", statusCode(outcome(t, dropped).err))
	e.queued(1) // the server saw the cancellation and took the event out
	st.let()

	require.NoError(t, outcome(t, first).err)
	p := outcome(t, kept)
	require.NoError(t, p.err)
	channel, _ := e.rowOf(p.resp.GetId())
	require.Equal(t, "kept", channel)
	require.Equal(t, []int{1, 1}, st.seen())
	var n int
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT count(*) FROM realtime_events WHERE channel = 'dropped'`).Scan(&n))
	require.Zero(t, n)
}

// TestMergedPublishOnLostDatabaseIsUnavailable: when the database goes
// away under a merged statement, every caller gets UNAVAILABLE and the
// events are not sent again one by one (a statement whose connection was
// lost may have committed; a second copy would be delivered twice).
func TestMergedPublishOnLostDatabaseIsUnavailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	st := holdFirstStatement(t, e.srv)
	first := e.publishAsync(t.Context(), e.human, "first", map[string]any{"i": -1.0})
	st.held(t)
	outs := []<-chan published{
		e.publishAsync(t.Context(), e.human, "fault", map[string]any{"i": 0.0}),
		e.publishAsync(t.Context(), e.human, "fault", map[string]any{"i": 1.0}),
		e.publishAsync(t.Context(), e.human, "fault", map[string]any{"i": 2.0}),
	}
	e.queued(len(outs))
	// The node's database refuses new connections and loses the ones it
	// has, from outside the node's pool (the database is dropped at the
	// test's end whatever its state).
	var db string
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT current_database()`).Scan(&db))
	admin, err := pgx.Connect(t.Context(), pgtest.AdminURL())
	require.NoError(t, err)
	defer admin.Close(context.Background())
	_, err = admin.Exec(t.Context(), `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` ALLOW_CONNECTIONS false`)
	require.NoError(t, err)
	_, err = admin.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, db)
	require.NoError(t, err)
	st.let()

	require.Equal(t, "Unavailable", statusCode(outcome(t, first).err))
	for _, out := range outs {
		require.Equal(t, "Unavailable", statusCode(outcome(t, out).err))
	}
	require.Equal(t, []int{1, len(outs)}, st.seen(), "no one-by-one retry")
}
