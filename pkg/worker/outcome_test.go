package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/worker"
)

// TestOnAckReportsEveryOutcomeOnce covers the outcomes besides retries.
func TestOnAckReportsEveryOutcomeOnce(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	conn := f.serve(t)
	ids := f.add(5)
	rec := newAcks()
	lost := make(chan error, 1)
	w := worker.New(conn, "q", func(ctx context.Context, todo *queuev1.Todo) error {
		switch todo.GetId() {
		case ids[0]:
			return nil
		case ids[1]:
			return errors.New("boom")
		case ids[2]:
			return worker.Permanent(errors.New("bad input"))
		case ids[3]:
			f.expire(todo.GetId())
			<-ctx.Done()
			lost <- context.Cause(ctx)
			return nil
		default:
			<-ctx.Done() // until the shutdown grace is over: released
			return ctx.Err()
		}
	}, worker.Options{Concurrency: 5, HeartbeatInterval: 10 * time.Millisecond, ShutdownGrace: 10 * time.Millisecond, Wait: time.Second, OnAck: rec.hook})
	stop := start(t, w)
	require.ErrorIs(t, <-lost, worker.ErrLeaseLost)
	require.Eventually(t, func() bool { return rec.count() == 4 }, waitFor, tick)
	require.NoError(t, stop())
	require.Equal(t, 5, rec.count())
	for i, want := range []worker.Outcome{worker.Completed, worker.Failed, worker.DeadLettered, worker.LeaseLost, worker.Released} {
		got := rec.of(ids[i])
		require.Equal(t, []worker.Outcome{want}, outcomes(got), "todo %d", i)
		if want == worker.LeaseLost {
			require.ErrorIs(t, got[0].err, worker.ErrLeaseLost)
		} else {
			require.NoError(t, got[0].err)
		}
	}
	require.Equal(t, "dead_lettered", worker.DeadLettered.String())
}
