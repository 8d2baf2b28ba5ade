package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/worker"
)

// TestBufferHoldsClaimedTodosAndReleasesThemOnShutdown: with Buffer, the
// worker keeps up to Concurrency+Buffer todos claimed, never runs more than
// Concurrency at once, renews the waiting todos' leases too, and gives back
// the ones that never started when it shuts down.
func TestBufferHoldsClaimedTodosAndReleasesThemOnShutdown(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	ids := f.add(10)

	var running, started atomic.Int32
	w := worker.New(conn, "q", func(ctx context.Context, _ *queuev1.Todo) error {
		started.Add(1)
		running.Add(1)
		defer running.Add(-1)
		<-ctx.Done() // runs until the shutdown grace is over
		return ctx.Err()
	}, worker.Options{
		Concurrency: 2, Buffer: 3, Wait: time.Second, ShutdownGrace: 50 * time.Millisecond,
		LeaseSeconds: 6, HeartbeatInterval: 5 * time.Millisecond,
	})
	stop := start(t, w)

	require.Eventually(t, func() bool { return f.record().running == 5 }, waitFor, tick, "Concurrency + Buffer claimed")
	require.Equal(t, 5, f.record().remaining)
	// Every claimed todo's lease is renewed, waiting or running.
	require.Eventually(t, func() bool {
		hb := f.record().heartbeats
		n := 0
		for _, id := range ids {
			if hb[id] >= 2 {
				n++
			}
		}
		return n == 5
	}, waitFor, tick)
	require.Equal(t, int32(2), running.Load(), "never more than Concurrency handlers")
	for _, c := range f.record().claims {
		require.LessOrEqual(t, c.GetMaxTodos(), int32(5))
	}

	require.NoError(t, stop())
	r := f.record()
	require.Len(t, r.released, 5, "the 2 cancelled by the grace and the 3 that waited")
	require.Zero(t, r.running)
	require.Empty(t, r.completed)
	require.Equal(t, int32(2), started.Load(), "waiting todos were released, not started")
	require.Equal(t, int64(5), w.Stats().Released)
}
