package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/worker"
)

const (
	waitFor = 60 * time.Second
	tick    = time.Millisecond
)

// start runs w until the returned stop is called; stop returns Run's error.
func start(t *testing.T, w *worker.Worker) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	var once atomic.Bool
	t.Cleanup(func() {
		if once.CompareAndSwap(false, true) {
			cancel()
			assert.NoError(t, <-errc)
		}
	})
	return func() error {
		once.Store(true)
		cancel()
		return <-errc
	}
}

func TestConcurrencyLimitAndPrefetch(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	f.add(20)

	var running, peak atomic.Int32
	gate := make(chan struct{})
	w := worker.New(conn, "q", func(ctx context.Context, _ *queuev1.Todo) error {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}, worker.Options{Concurrency: 3, Wait: time.Second})
	stop := start(t, w)

	require.Eventually(t, func() bool { return running.Load() == 3 }, waitFor, tick)
	r := f.record()
	require.Equal(t, 3, r.running, "only as many todos leased as can run")
	require.Equal(t, 17, r.remaining)
	close(gate)
	require.Eventually(t, func() bool { return w.Stats().Completed == 20 }, waitFor, tick)
	require.NoError(t, stop())

	require.LessOrEqual(t, peak.Load(), int32(3))
	r = f.record()
	require.Len(t, r.completed, 20)
	for _, c := range r.claims {
		require.LessOrEqual(t, c.GetMaxTodos(), int32(3), "never claims beyond free capacity")
		require.GreaterOrEqual(t, c.GetMaxTodos(), int32(1))
		require.Equal(t, "q", c.GetQueue())
		require.NotEmpty(t, c.GetWorkerId())
		require.Equal(t, int32(30), c.GetLeaseSeconds())
		require.Contains(t, []time.Duration{0, time.Second}, c.GetWait().AsDuration(), "long-poll or none")
	}
	require.Equal(t, int32(3), r.claims[0].GetMaxTodos(), "first claim fetches a full batch")
	s := w.Stats()
	require.Equal(t, int64(20), s.Claimed)
	require.Zero(t, s.Failed+s.Released+s.LeaseLost+s.AcksAbandoned+s.AcksRetried)
}

func TestHeartbeatsExtendLeaseAndStopOnCompletion(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	ids := f.add(1)

	gate := make(chan struct{})
	w := worker.New(conn, "q", func(ctx context.Context, _ *queuev1.Todo) error {
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}, worker.Options{LeaseSeconds: 7, HeartbeatInterval: 5 * time.Millisecond, Wait: time.Second})
	stop := start(t, w)

	require.Eventually(t, func() bool { return f.record().heartbeats[ids[0]] >= 3 }, waitFor, tick)
	close(gate)
	require.Eventually(t, func() bool { return w.Stats().Completed == 1 }, waitFor, tick)
	require.NoError(t, stop())

	r := f.record()
	require.Equal(t, []int64{ids[0]}, r.completed)
	require.Empty(t, r.stale, "no heartbeat after completion")
	token := f.token(ids[0])
	require.Greater(t, token, int64(1), "a random token, not the attempt")
	for _, hb := range r.hbReqs {
		require.Equal(t, ids[0], hb.GetId())
		require.Equal(t, token, hb.GetLeaseToken(), "the lease token from the claim")
		require.Equal(t, int32(7), hb.GetLeaseSeconds())
	}
}

func TestDefaultHeartbeatIsAThirdOfTheLease(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	ids := f.add(1)

	gate := make(chan struct{})
	w := worker.New(conn, "q", func(ctx context.Context, _ *queuev1.Todo) error {
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}, worker.Options{LeaseSeconds: 1, Wait: time.Second})
	begin := time.Now() // before the claim: a descheduled test cannot see a shorter interval
	stop := start(t, w)
	require.Eventually(t, func() bool { return f.record().heartbeats[ids[0]] >= 2 }, waitFor, tick)
	elapsed := time.Since(begin)
	close(gate)
	require.NoError(t, stop())
	require.GreaterOrEqual(t, elapsed, 600*time.Millisecond, "two heartbeats at lease/3 take ≥ 2/3 s")
}

func TestLeaseLostCancelsHandlerAndNeverCompletes(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	ids := f.add(1)

	started := make(chan struct{})
	cause := make(chan error, 1)
	w := worker.New(conn, "q", func(ctx context.Context, _ *queuev1.Todo) error {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil // even a "success" after losing the lease must not complete
	}, worker.Options{HeartbeatInterval: 5 * time.Millisecond, Wait: time.Second})
	stop := start(t, w)

	<-started
	f.expire(ids[0])
	require.ErrorIs(t, <-cause, worker.ErrLeaseLost)
	require.Eventually(t, func() bool { return w.Stats().LeaseLost == 1 }, waitFor, tick)
	require.NoError(t, stop())

	r := f.record()
	require.Empty(t, r.completed)
	require.Empty(t, r.fails)
	require.Empty(t, r.released)
	require.Positive(t, r.stale["HeartbeatBatch"])
	require.Zero(t, r.stale["Complete"]+r.stale["CompleteBatch"]+r.stale["Fail"]+r.stale["Release"], "nothing tried to end the lost lease")
}

func TestShutdownFinishesThenReleases(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	ids := f.add(3)

	quick := make(chan struct{})
	var inHandler atomic.Int32
	w := worker.New(conn, "q", func(ctx context.Context, todo *queuev1.Todo) error {
		inHandler.Add(1)
		if todo.GetId() == ids[0] {
			<-quick // finishes within the grace period
			return nil
		}
		<-ctx.Done() // does not finish: cancelled when the grace runs out
		return ctx.Err()
	}, worker.Options{Concurrency: 3, ShutdownGrace: 100 * time.Millisecond, Wait: time.Second})
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	require.Eventually(t, func() bool { return inHandler.Load() == 3 }, waitFor, tick)
	claimsBefore := len(f.record().claims)
	// Shutdown begins before the quick handler may finish: released the other
	// way round (stop in a goroutine, then close(quick)), the freed slot could
	// claim again, more than once, before the cancel landed.
	cancel()
	close(quick)
	require.NoError(t, <-done)

	r := f.record()
	require.Equal(t, []int64{ids[0]}, r.completed)
	require.ElementsMatch(t, ids[1:], r.released)
	require.Empty(t, r.fails)
	require.LessOrEqual(t, len(r.claims), claimsBefore+1, "no claims after shutdown began")
	s := w.Stats()
	require.Equal(t, int64(1), s.Completed)
	require.Equal(t, int64(2), s.Released)
	require.Zero(t, s.Failed)
}

func TestHandlerErrorsFail(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	ids := f.add(5)

	w := worker.New(conn, "q", func(_ context.Context, todo *queuev1.Todo) error {
		switch todo.GetId() {
		case ids[0]:
			return errors.New("boom")
		case ids[1]:
			return worker.Permanent(errors.New("bad input"))
		case ids[2]:
			return worker.RetryAfter(errors.New("rate limited"), 5*time.Second)
		case ids[3]:
			panic("oops")
		default:
			return nil
		}
	}, worker.Options{Wait: time.Second})
	stop := start(t, w)
	require.Eventually(t, func() bool { s := w.Stats(); return s.Completed+s.Failed == 5 }, waitFor, tick)
	require.NoError(t, stop())

	r := f.record()
	require.Equal(t, []int64{ids[4]}, r.completed)
	byID := map[int64]*queuev1.FailRequest{}
	for _, fr := range r.fails {
		byID[fr.GetId()] = fr
		require.Equal(t, f.token(fr.GetId()), fr.GetLeaseToken())
	}
	require.Len(t, byID, 4)
	assert.Equal(t, "boom", byID[ids[0]].GetError())
	assert.False(t, byID[ids[0]].GetDeadLetter())
	assert.Nil(t, byID[ids[0]].GetRetryAfter())
	assert.Equal(t, "bad input", byID[ids[1]].GetError())
	assert.True(t, byID[ids[1]].GetDeadLetter())
	assert.Equal(t, "rate limited", byID[ids[2]].GetError())
	assert.Equal(t, 5*time.Second, byID[ids[2]].GetRetryAfter().AsDuration())
	assert.False(t, byID[ids[2]].GetDeadLetter())
	assert.Contains(t, byID[ids[3]].GetError(), "oops")
	s := w.Stats()
	require.Equal(t, int64(4), s.Failed)
	require.Equal(t, int64(1), s.DeadLettered)
}

func TestClaimErrorsBackOff(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	f.setClaimErr(func(n int) error {
		if n <= 4 {
			return status.Error(codes.Unavailable, "database down")
		}
		return nil
	})
	f.add(1)

	const step = 20 * time.Millisecond
	w := worker.New(conn, "q", func(context.Context, *queuev1.Todo) error { return nil },
		worker.Options{BackoffMin: step, BackoffMax: 4 * step, Wait: time.Second})
	stop := start(t, w)
	require.Eventually(t, func() bool { return w.Stats().Completed == 1 }, waitFor, tick)
	require.NoError(t, stop())

	require.Equal(t, int64(4), w.Stats().ClaimErrors)
	times := f.record().claimTimes
	require.GreaterOrEqual(t, len(times), 5)
	// Equal jitter: the n-th wait is at least half of min(max, base·2ⁿ).
	for i, minGap := range []time.Duration{step / 2, step, 2 * step, 2 * step} {
		require.GreaterOrEqual(t, times[i+1].Sub(times[i]), minGap, "gap after failure %d", i+1)
	}
}

func TestFatalClaimErrorStopsRun(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	f.setClaimErr(func(int) error { return status.Error(codes.PermissionDenied, "needs agent scope") })
	w := worker.New(conn, "q", func(context.Context, *queuev1.Todo) error { return nil }, worker.Options{})
	err := w.Run(t.Context())
	require.Equal(t, codes.PermissionDenied, status.Code(err))
}

func TestInvalidOptions(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	h := func(context.Context, *queuev1.Todo) error { return nil }
	for name, w := range map[string]*worker.Worker{
		"nil conn":     worker.New(nil, "q", h, worker.Options{}),
		"nil handler":  worker.New(conn, "q", nil, worker.Options{}),
		"empty queue":  worker.New(conn, "", h, worker.Options{}),
		"prefetch":     worker.New(conn, "q", h, worker.Options{Concurrency: 2000, Prefetch: 1001}),
		"lease":        worker.New(conn, "q", h, worker.Options{LeaseSeconds: 3601}),
		"wait":         worker.New(conn, "q", h, worker.Options{Wait: 61 * time.Second}),
		"negative":     worker.New(conn, "q", h, worker.Options{Concurrency: -1}),
		"long worker":  worker.New(conn, "q", h, worker.Options{WorkerID: string(make([]byte, 256))}),
		"neg interval": worker.New(conn, "q", h, worker.Options{HeartbeatInterval: -time.Second}),
		"ack batch":    worker.New(conn, "q", h, worker.Options{AckBatch: 1001}),
		"neg batch":    worker.New(conn, "q", h, worker.Options{AckBatch: -1}),
		"ack delay":    worker.New(conn, "q", h, worker.Options{AckDelay: 2 * time.Second}),
		"neg buffer":   worker.New(conn, "q", h, worker.Options{Buffer: -1}),
		"buffer":       worker.New(conn, "q", h, worker.Options{Buffer: 1001}),
	} {
		require.Error(t, w.Run(t.Context()), name)
	}
	require.Empty(t, f.record().claims)
}

func TestErrorWrappers(t *testing.T) {
	t.Parallel()
	base := errors.New("x")
	require.NoError(t, worker.Permanent(nil))
	require.NoError(t, worker.RetryAfter(nil, time.Second))
	require.True(t, worker.IsPermanent(worker.Permanent(base)))
	require.ErrorIs(t, worker.Permanent(base), base)
	require.ErrorIs(t, worker.RetryAfter(base, time.Second), base)
	require.False(t, worker.IsPermanent(base))
}
