package worker_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/worker"
)

// ack is one OnAck call.
type ack struct {
	outcome worker.Outcome
	err     error
	at      time.Time
}

// acks records OnAck calls by todo id.
type acks struct {
	mu   sync.Mutex
	byID map[int64][]ack
	n    int
}

func newAcks() *acks { return &acks{byID: map[int64][]ack{}} }

func (a *acks) hook(todo *queuev1.Todo, o worker.Outcome, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.byID[todo.GetId()] = append(a.byID[todo.GetId()], ack{outcome: o, err: err, at: time.Now()})
	a.n++
}

func (a *acks) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

func (a *acks) of(id int64) []ack {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]ack(nil), a.byID[id]...)
}

// failing returns a fault that fails method's calls numbered in [from, to]
// with code, before they take effect or, with after, after.
func failing(method string, from, to int, code codes.Code, after bool) func(string, int) (bool, error) {
	return func(m string, n int) (bool, error) {
		if m == method && n >= from && n <= to {
			return after, status.Error(code, "injected "+code.String())
		}
		return false, nil
	}
}

// runOne runs a worker with opts over one todo that handler handles, until
// its OnAck was called, and returns the todo id, the OnAck calls and Stats.
func runOne(t *testing.T, f *fakeQueue, handler worker.Handler, opts worker.Options) (int64, *acks, worker.Stats) {
	t.Helper()
	conn := f.serve(t)
	id := f.add(1)[0]
	rec := newAcks()
	opts.OnAck = rec.hook
	if opts.Wait == 0 {
		opts.Wait = time.Second
	}
	w := worker.New(conn, "q", handler, opts)
	stop := start(t, w)
	require.Eventually(t, func() bool { return rec.count() == 1 }, waitFor, tick)
	require.NoError(t, stop())
	require.Equal(t, 1, rec.count(), "OnAck once")
	return id, rec, w.Stats()
}

func succeed(context.Context, *queuev1.Todo) error { return nil }

func TestTransientAckErrorsAreRetriedUntilConfirmed(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		method  string
		code    codes.Code
		noBatch bool
	}{
		"batch unavailable":         {"CompleteBatch", codes.Unavailable, false},
		"batch aborted":             {"CompleteBatch", codes.Aborted, false},
		"single unavailable":        {"Complete", codes.Unavailable, true},
		"single resource exhausted": {"Complete", codes.ResourceExhausted, true},
		"single deadline exceeded":  {"Complete", codes.DeadlineExceeded, true},
		"single unknown":            {"Complete", codes.Unknown, true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakeQueue()
			f.set(func(f *fakeQueue) {
				f.noBatch = tc.noBatch
				f.fault = failing(tc.method, 1, 2, tc.code, false)
			})
			id, rec, s := runOne(t, f, succeed, worker.Options{})
			require.Equal(t, []worker.Outcome{worker.Completed}, outcomes(rec.of(id)))
			require.NoError(t, rec.of(id)[0].err)
			r := f.record()
			require.Equal(t, []int64{id}, r.completed)
			require.Equal(t, 3, r.calls[tc.method], "two failures, then the confirmation")
			require.Equal(t, int64(1), s.Completed)
			require.Equal(t, int64(1), s.AcksRetried)
			require.Equal(t, int64(2), s.AckRetries)
			require.Equal(t, int64(1), s.AcksRecovered)
			require.Zero(t, s.AcksAbandoned+s.LeaseLost+s.AcksAlready)
		})
	}
}

func outcomes(as []ack) []worker.Outcome {
	out := make([]worker.Outcome, len(as))
	for i, a := range as {
		out[i] = a.outcome
	}
	return out
}

// TestLostAnswerIsConfirmedByTheRetry: the first attempt commits but its
// answer is lost (a node dies after the commit); the retry is answered
// already and the todo counts as finished once.
func TestLostAnswerIsConfirmedByTheRetry(t *testing.T) {
	t.Parallel()
	boom := func(context.Context, *queuev1.Todo) error { return errors.New("boom") }
	for name, tc := range map[string]struct {
		method  string
		noBatch bool
		handler worker.Handler
		want    worker.Outcome
	}{
		"CompleteBatch": {"CompleteBatch", false, succeed, worker.Completed},
		"Complete":      {"Complete", true, succeed, worker.Completed},
		"Fail":          {"Fail", false, boom, worker.Failed},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakeQueue()
			f.set(func(f *fakeQueue) {
				f.noBatch = tc.noBatch
				f.fault = failing(tc.method, 1, 1, codes.Unavailable, true)
			})
			id, rec, s := runOne(t, f, tc.handler, worker.Options{})
			require.Equal(t, []worker.Outcome{tc.want}, outcomes(rec.of(id)))
			require.NoError(t, rec.of(id)[0].err)
			r := f.record()
			require.Equal(t, 2, r.calls[tc.method])
			require.Len(t, append(r.completed, idsOf(r.fails)...), 1, "applied once")
			require.Equal(t, int64(1), s.AcksAlready)
			require.Equal(t, int64(1), s.AcksRecovered)
			require.Zero(t, s.AcksAbandoned+s.LeaseLost)
		})
	}
}

func idsOf(fs []*queuev1.FailRequest) []int64 {
	ids := make([]int64, len(fs))
	for i, fr := range fs {
		ids[i] = fr.GetId()
	}
	return ids
}

// TestStaleLeaseAckIsLeaseLostNotRetried: FAILED_PRECONDITION ends the
// lease at once; no retry.
func TestStaleLeaseAckIsLeaseLostNotRetried(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		method string
		err    error
	}{
		"Complete": {"Complete", nil},
		"Fail":     {"Fail", errors.New("boom")},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakeQueue()
			f.set(func(f *fakeQueue) { f.noBatch = true })
			handler := func(_ context.Context, todo *queuev1.Todo) error {
				f.expire(todo.GetId()) // no heartbeat notices (interval 10 s)
				return tc.err
			}
			id, rec, s := runOne(t, f, handler, worker.Options{})
			got := rec.of(id)
			require.Equal(t, []worker.Outcome{worker.LeaseLost}, outcomes(got))
			require.ErrorIs(t, got[0].err, worker.ErrLeaseLost)
			require.Equal(t, codes.FailedPrecondition, status.Code(got[0].err))
			r := f.record()
			require.Equal(t, 1, r.calls[tc.method], "not retried")
			require.Equal(t, 1, r.stale[tc.method])
			require.Equal(t, int64(1), s.LeaseLost)
			require.Zero(t, s.AcksRetried+s.AcksAbandoned+s.Completed+s.Failed)
		})
	}
}

// TestAckErrorsRetryingCannotFixAreNotRetried: INTERNAL (a server bug) and
// client mistakes end as Unconfirmed after one attempt.
func TestAckErrorsRetryingCannotFixAreNotRetried(t *testing.T) {
	t.Parallel()
	for _, code := range []codes.Code{codes.Internal, codes.InvalidArgument, codes.PermissionDenied, codes.Unauthenticated} {
		t.Run(code.String(), func(t *testing.T) {
			t.Parallel()
			f := newFakeQueue()
			f.set(func(f *fakeQueue) { f.fault = failing("CompleteBatch", 1, 1000, code, false) })
			id, rec, s := runOne(t, f, succeed, worker.Options{})
			got := rec.of(id)
			require.Equal(t, []worker.Outcome{worker.Unconfirmed}, outcomes(got))
			require.ErrorIs(t, got[0].err, worker.ErrUnconfirmed)
			require.Equal(t, code, status.Code(got[0].err))
			require.Equal(t, 1, f.record().calls["CompleteBatch"])
			require.Equal(t, int64(1), s.AcksAbandoned)
			require.Zero(t, s.AcksRetried+s.Completed)
		})
	}
}

// TestAckIsGivenUpWhenTheLeaseWouldExpire: while neither the ack nor the
// heartbeats get through, the ack is retried until the lease may have
// expired, then given up and reported.
func TestAckIsGivenUpWhenTheLeaseWouldExpire(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	f.set(func(f *fakeQueue) {
		f.fault = func(m string, _ int) (bool, error) {
			if m == "CompleteBatch" || m == "HeartbeatBatch" {
				return false, status.Error(codes.Unavailable, "database down")
			}
			return false, nil
		}
	})
	id, rec, s := runOne(t, f, succeed, worker.Options{LeaseSeconds: 1, HeartbeatInterval: 20 * time.Millisecond})
	got := rec.of(id)
	require.Equal(t, []worker.Outcome{worker.Unconfirmed}, outcomes(got))
	require.ErrorIs(t, got[0].err, worker.ErrUnconfirmed)
	require.Equal(t, codes.Unavailable, status.Code(got[0].err))
	r := f.record()
	require.Greater(t, r.calls["CompleteBatch"], 2, "retried")
	require.Empty(t, r.completed)
	// Given up at the lease's end, not before (the claim was sent at most
	// moments before the server saw it).
	claimed := r.claimTimes[0]
	require.GreaterOrEqual(t, got[0].at.Sub(claimed), 900*time.Millisecond)
	require.Equal(t, int64(1), s.AcksRetried)
	require.Equal(t, int64(1), s.AcksAbandoned)
	require.Zero(t, s.AcksRecovered+s.Completed+s.LeaseLost)
}

// TestHeartbeatsKeepTheLeaseWhileTheAckIsRetried: a completion that fails
// for longer than the lease lasts still lands, because the lease is renewed
// between its attempts (the fake expires leases that are not).
func TestHeartbeatsKeepTheLeaseWhileTheAckIsRetried(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	var firstTry, confirmed atomic.Int64 // unix nanos
	f.set(func(f *fakeQueue) {
		beatsAtFirstTry := -1
		f.fault = func(m string, _ int) (bool, error) {
			if m != "CompleteBatch" {
				return false, nil
			}
			beats := 0
			for _, n := range f.heartbeats { // f.mu is held
				beats += n
			}
			if beatsAtFirstTry < 0 {
				beatsAtFirstTry = beats
				firstTry.Store(time.Now().UnixNano())
			}
			// 40 renewals 30 ms apart outlast the 1 s lease.
			if beats-beatsAtFirstTry < 40 {
				return false, status.Error(codes.Unavailable, "database restarting")
			}
			confirmed.Store(time.Now().UnixNano())
			return false, nil
		}
	})
	id, rec, s := runOne(t, f, succeed, worker.Options{LeaseSeconds: 1, HeartbeatInterval: 30 * time.Millisecond})
	require.Equal(t, []worker.Outcome{worker.Completed}, outcomes(rec.of(id)))
	require.Equal(t, []int64{id}, f.record().completed)
	require.Greater(t, time.Duration(confirmed.Load()-firstTry.Load()), time.Second, "the retries outlasted the first lease")
	require.Equal(t, int64(1), s.AcksRecovered)
	require.Zero(t, s.AcksAbandoned+s.LeaseLost)
	require.Empty(t, f.record().stale, "no heartbeat after the completion")
}
