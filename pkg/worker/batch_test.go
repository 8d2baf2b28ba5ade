package worker_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/worker"
)

// gated returns a handler that blocks until gate is closed (or its context
// ends) and counts the handlers that entered and that returned.
func gated(gate <-chan struct{}, entered, returned *atomic.Int32) worker.Handler {
	return func(ctx context.Context, _ *queuev1.Todo) error {
		entered.Add(1)
		defer returned.Add(1)
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func maxLen(batches [][]int64) int {
	m := 0
	for _, b := range batches {
		m = max(m, len(b))
	}
	return m
}

func TestCompletionsAreBatched(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	ids := f.add(50)

	gate := make(chan struct{})
	var entered, returned atomic.Int32
	w := worker.New(conn, "q", gated(gate, &entered, &returned),
		worker.Options{Concurrency: 50, AckDelay: 200 * time.Millisecond, Wait: time.Second})
	stop := start(t, w)
	require.Eventually(t, func() bool { return entered.Load() == 50 }, waitFor, tick)
	close(gate) // 50 completions at once
	require.Eventually(t, func() bool { return w.Stats().Completed == 50 }, waitFor, tick)
	require.NoError(t, stop())

	r := f.record()
	require.Zero(t, r.singleCompletes, "completions go through CompleteBatch")
	require.ElementsMatch(t, ids, r.completed)
	require.GreaterOrEqual(t, maxLen(r.completeBatches), 25, "one CompleteBatch carries many items: %v", r.completeBatches)
	require.LessOrEqual(t, len(r.completeBatches), 5)
	s := w.Stats()
	require.Equal(t, int64(len(r.completeBatches)), s.CompleteBatches)
	require.Zero(t, s.LeaseLost+s.AcksAbandoned+s.Failed)
}

func TestAckBatchBoundsBatchSize(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	f.add(300)

	w := worker.New(conn, "q", func(context.Context, *queuev1.Todo) error { return nil },
		worker.Options{Concurrency: 100, AckBatch: 7, AckDelay: 50 * time.Millisecond, Wait: time.Second})
	stop := start(t, w)
	require.Eventually(t, func() bool { return w.Stats().Completed == 300 }, waitFor, tick)
	require.NoError(t, stop())

	r := f.record()
	require.Len(t, r.completed, 300)
	require.Equal(t, 7, maxLen(r.completeBatches), "batches fill up to AckBatch and no further")
}

func TestUnderLoadBatchesFormWithDefaults(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	f.add(3000)

	w := worker.New(conn, "q", func(context.Context, *queuev1.Todo) error { return nil },
		worker.Options{Concurrency: 200, Wait: time.Second})
	stop := start(t, w)
	require.Eventually(t, func() bool { return w.Stats().Completed == 3000 }, waitFor, tick)
	require.NoError(t, stop())

	r := f.record()
	require.Len(t, r.completed, 3000)
	require.Zero(t, r.singleCompletes)
	require.Greater(t, maxLen(r.completeBatches), 10, "batches form under load")
	require.LessOrEqual(t, maxLen(r.completeBatches), 500, "default AckBatch")
	require.Less(t, len(r.completeBatches), 3000/5)
}

func TestNoAckDelayStillCompletes(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	ids := f.add(200)

	w := worker.New(conn, "q", func(context.Context, *queuev1.Todo) error { return nil },
		worker.Options{Concurrency: 20, AckDelay: worker.NoAckDelay, Wait: time.Second})
	stop := start(t, w)
	require.Eventually(t, func() bool { return w.Stats().Completed == 200 }, waitFor, tick)
	require.NoError(t, stop())
	r := f.record()
	require.ElementsMatch(t, ids, r.completed)
	require.Zero(t, r.singleCompletes)
}

func TestStaleLeaseInBatchIsLeaseLost(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	ids := f.add(3)

	gate := make(chan struct{})
	var entered, returned atomic.Int32
	w := worker.New(conn, "q", gated(gate, &entered, &returned),
		worker.Options{Concurrency: 3, AckDelay: 100 * time.Millisecond, Wait: time.Second})
	stop := start(t, w)
	require.Eventually(t, func() bool { return entered.Load() == 3 }, waitFor, tick)
	f.expire(ids[1]) // no heartbeat notices before the completion (interval 10 s)
	close(gate)
	require.Eventually(t, func() bool { s := w.Stats(); return s.Completed+s.LeaseLost == 3 }, waitFor, tick)
	require.NoError(t, stop())

	r := f.record()
	require.ElementsMatch(t, []int64{ids[0], ids[2]}, r.completed)
	require.Equal(t, 1, r.stale["CompleteBatch"], "tried once: a stale lease is not retried")
	require.Empty(t, r.fails)
	s := w.Stats()
	require.Equal(t, int64(2), s.Completed)
	require.Equal(t, int64(1), s.LeaseLost)
	require.Zero(t, s.AcksAbandoned)
}

func TestCompleteBatchTransportErrorsAreRetried(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	ids := f.add(5)
	f.set(func(f *fakeQueue) {
		f.fault = func(method string, n int) (bool, error) {
			if method == "CompleteBatch" && n <= 2 {
				return false, status.Error(codes.Unavailable, "database down")
			}
			return false, nil
		}
	})

	w := worker.New(conn, "q", func(context.Context, *queuev1.Todo) error { return nil },
		worker.Options{Concurrency: 5, Wait: time.Second})
	stop := start(t, w)
	require.Eventually(t, func() bool { return w.Stats().Completed == 5 }, waitFor, tick)
	require.NoError(t, stop())
	require.ElementsMatch(t, ids, f.record().completed)
	s := w.Stats()
	require.Zero(t, s.AcksAbandoned)
	require.Positive(t, s.AcksRetried, "the items of the failed batches were retried")
	require.Equal(t, s.AcksRetried, s.AcksRecovered)
}

func TestShutdownFlushesPendingAcks(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	ids := f.add(5)

	var handled atomic.Int32
	w := worker.New(conn, "q", func(context.Context, *queuev1.Todo) error {
		handled.Add(1)
		return nil
	}, worker.Options{Concurrency: 10, AckBatch: 1000, AckDelay: time.Second, Wait: time.Second})
	stop := start(t, w)
	require.Eventually(t, func() bool { return handled.Load() == 5 }, waitFor, tick)
	require.NoError(t, stop(), "shutdown flushes the queued acks instead of waiting out AckDelay (the fake records them below)")

	// Run returned only after the queued completions were sent and answered.
	r := f.record()
	require.ElementsMatch(t, ids, r.completed)
	require.Equal(t, int64(5), w.Stats().Completed)
}

func TestHeartbeatsAreCoalesced(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	ids := f.add(5)

	gate := make(chan struct{})
	var entered, returned atomic.Int32
	w := worker.New(conn, "q", gated(gate, &entered, &returned),
		worker.Options{Concurrency: 5, HeartbeatInterval: 10 * time.Millisecond, Wait: time.Second})
	stop := start(t, w)
	require.Eventually(t, func() bool { return entered.Load() == 5 }, waitFor, tick)
	require.Eventually(t, func() bool {
		r := f.record()
		for _, id := range ids {
			if r.heartbeats[id] < 3 {
				return false
			}
		}
		return true
	}, waitFor, tick)
	close(gate)
	require.Eventually(t, func() bool { return w.Stats().Completed == 5 }, waitFor, tick)
	require.NoError(t, stop())

	r := f.record()
	require.Contains(t, r.hbBatches, 5, "one HeartbeatBatch renews every running todo")
	require.Less(t, len(r.hbBatches), len(r.hbReqs), "fewer calls than renewals")
	require.Empty(t, r.stale, "no heartbeat after completion")
	require.Equal(t, int64(len(r.hbBatches)), w.Stats().HeartbeatBatches)
}

func TestFallsBackWithoutBatchRPCs(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	ids := f.add(20)
	f.set(func(f *fakeQueue) { f.noBatch = true })

	gate := make(chan struct{})
	var entered, returned atomic.Int32
	w := worker.New(conn, "q", gated(gate, &entered, &returned),
		worker.Options{Concurrency: 20, HeartbeatInterval: 10 * time.Millisecond, Wait: time.Second})
	stop := start(t, w)
	require.Eventually(t, func() bool { return entered.Load() == 20 }, waitFor, tick)
	require.Eventually(t, func() bool { return f.record().heartbeats[ids[0]] >= 2 }, waitFor, tick)
	close(gate)
	require.Eventually(t, func() bool { return w.Stats().Completed == 20 }, waitFor, tick)
	require.NoError(t, stop())
	r := f.record()
	require.ElementsMatch(t, ids, r.completed)
	require.Equal(t, 20, r.singleCompletes)
}

func TestClaimsKeepThePipelineFull(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	f.add(2000)

	w := worker.New(conn, "q", func(context.Context, *queuev1.Todo) error { return nil },
		worker.Options{Concurrency: 100, Wait: time.Second})
	stop := start(t, w)
	require.Eventually(t, func() bool { return w.Stats().Completed == 2000 }, waitFor, tick)
	require.NoError(t, stop())

	r := f.record()
	require.Equal(t, int32(100), r.claims[0].GetMaxTodos())
	// While the queue is full, claims do not long-poll and ask for big
	// batches: far fewer claims than todos.
	var polls int
	for _, c := range r.claims {
		if c.GetWait().AsDuration() > 0 {
			polls++
		}
	}
	require.Less(t, len(r.claims), 2000/10, "claims: %d", len(r.claims))
	require.Less(t, polls, len(r.claims))
	sizes := make([]int32, 0, len(r.claims))
	for _, c := range r.claims {
		sizes = append(sizes, c.GetMaxTodos())
	}
	require.Equal(t, int32(100), slices.Max(sizes))
}
