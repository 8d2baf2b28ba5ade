package groupcommit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/groupcommit"
)

// TestCancel: a call whose context ends while it is queued is dropped and
// gets the context's error; once sent, it waits for the statement.
func TestCancel(t *testing.T) {
	t.Parallel()

	t.Run("queued", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, groupcommit.Options[int64]{Window: time.Hour}, false)
		tb.start(t)
		ctx, cancel := context.WithCancel(t.Context())
		a := do(ctx, tb.b, "k", 1)
		tb.queued(t, 1)
		cancel()
		require.Equal(t, outcome{err: context.Canceled}, recv(t, a))
		require.Zero(t, groupcommit.Queued(tb.b))
		b := do(t.Context(), tb.b, "k", 2)
		tb.queued(t, 1)
		tb.clk.Advance(time.Hour)
		s := recv(t, tb.db.stmts)
		require.Equal(t, []int64{2}, s.items, "only the live call is sent")
		s.ok()
		require.Equal(t, outcome{res: "k/2"}, recv(t, b))
	})

	t.Run("sent", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, groupcommit.Options[int64]{}, false)
		tb.start(t)
		ctx, cancel := context.WithCancel(t.Context())
		a := do(ctx, tb.b, "k", 1)
		s := recv(t, tb.db.stmts)
		cancel()
		require.NoError(t, s.ctx.Err(), "the statement does not run on the caller's context")
		s.ok()
		require.Equal(t, outcome{res: "k/1"}, recv(t, a))
	})
}

// TestStop: Stop flushes everything queued at once (however long the
// window, duplicates included) and waits for it; when its context ends
// first, the statements in flight are cancelled.
func TestStop(t *testing.T) {
	t.Parallel()

	t.Run("drains", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, groupcommit.Options[int64]{Window: time.Hour}, false)
		tb.start(t)
		var outs []<-chan outcome
		for _, it := range []int64{1, 2, 1} {
			outs = append(outs, do(t.Context(), tb.b, "k", it))
		}
		tb.queued(t, 3)
		stopped := make(chan error, 1)
		go func() { stopped <- tb.b.Stop(t.Context()) }()
		s := recv(t, tb.db.stmts)
		require.Equal(t, []int64{1, 2}, s.items)
		s.ok()
		s = recv(t, tb.db.stmts)
		require.Equal(t, []int64{1}, s.items)
		require.Empty(t, stopped, "Stop waits for the last statement")
		s.ok()
		require.NoError(t, recv(t, stopped))
		for _, out := range outs {
			require.NoError(t, recv(t, out).err)
		}
	})

	t.Run("gives up", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, groupcommit.Options[int64]{}, false)
		tb.start(t)
		a := do(t.Context(), tb.b, "k", 1)
		s := recv(t, tb.db.stmts) // never answered
		ctx, cancel := context.WithCancel(t.Context())
		cancel() // no time to wait at all
		require.ErrorIs(t, tb.b.Stop(ctx), context.Canceled)
		require.ErrorIs(t, s.ctx.Err(), context.Canceled, "the statement was cancelled")
		require.ErrorIs(t, recv(t, a).err, context.Canceled)
		require.True(t, directly(t, tb), "after Stop")
	})
}

// directly reports whether a call runs directly now (on the caller's
// context), answering the statement it causes.
func directly(t *testing.T, tb *testBundle) bool {
	t.Helper()
	type ctxKey struct{}
	ctx := context.WithValue(t.Context(), ctxKey{}, "caller")
	out := do(ctx, tb.b, "direct", 7)
	s := recv(t, tb.db.stmts)
	s.ok()
	require.Equal(t, outcome{res: "direct/7"}, recv(t, out))
	return s.ctx.Value(ctxKey{}) == "caller"
}

// TestDirect: before Start and after Stop each call is a batch of one on
// the caller's context; Start and Stop tolerate repeats and Start after Stop
// does nothing.
func TestDirect(t *testing.T) {
	t.Parallel()

	t.Run("lifecycle", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, groupcommit.Options[int64]{Window: time.Hour}, false)
		require.Equal(t, "test", tb.b.Name())
		require.True(t, directly(t, tb), "before Start")
		tb.start(t)
		tb.start(t)
		a := do(t.Context(), tb.b, "k", 1)
		tb.queued(t, 1) // merged now: waits for the window
		stopped := make(chan error, 1)
		go func() { stopped <- tb.b.Stop(t.Context()) }()
		recv(t, tb.db.stmts).ok()
		require.NoError(t, recv(t, stopped))
		require.NoError(t, recv(t, a).err)
		require.NoError(t, tb.b.Stop(t.Context()), "Stop twice")
		require.True(t, directly(t, tb), "after Stop")
		tb.start(t)
		require.True(t, directly(t, tb), "Start after Stop does nothing")
		require.Equal(t, []int{1, 1, 1, 1}, tb.db.hooked())
	})

	t.Run("stop before start", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, groupcommit.Options[int64]{}, false)
		require.NoError(t, tb.b.Stop(t.Context()))
		tb.start(t)
		require.True(t, directly(t, tb))
	})
}

// TestTimeout: Timeout bounds each statement, batched or direct; a batch
// that ran out of time is not retried item by item.
func TestTimeout(t *testing.T) {
	t.Parallel()

	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, groupcommit.Options[int64]{Timeout: time.Hour}, false)
		check := func(started bool) {
			before := time.Now()
			out := do(t.Context(), tb.b, "k", 1)
			s := recv(t, tb.db.stmts)
			deadline, ok := s.ctx.Deadline()
			require.True(t, ok, "started %v", started)
			require.WithinRange(t, deadline, before, time.Now().Add(time.Hour))
			s.ok()
			require.NoError(t, recv(t, out).err)
		}
		check(false)
		tb.start(t)
		check(true)
	})

	t.Run("expires", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, groupcommit.Options[int64]{Window: time.Second, Timeout: time.Millisecond}, false)
		tb.start(t)
		a, b := do(t.Context(), tb.b, "k", 1), do(t.Context(), tb.b, "k", 2)
		tb.queued(t, 2)
		tb.clk.Advance(time.Second)
		s := recv(t, tb.db.stmts) // never answered: its deadline passes
		require.Len(t, s.items, 2)
		require.ErrorIs(t, recv(t, a).err, context.DeadlineExceeded)
		require.ErrorIs(t, recv(t, b).err, context.DeadlineExceeded)
		tb.noStatement(t)
	})
}

// TestStopRacingCalls: calls racing Stop each return their result, queued
// or direct; none is left behind in the queue.
func TestStopRacingCalls(t *testing.T) {
	t.Parallel()
	exec := func(_ context.Context, key string, items []int64) ([]string, error) {
		res := make([]string, len(items))
		for i, it := range items {
			res[i] = result(key, it)
		}
		return res, nil
	}
	for range 200 {
		b := groupcommit.New("test", exec, groupcommit.Options[int64]{})
		require.NoError(t, b.Start(t.Context()))
		var wg sync.WaitGroup
		for i := range int64(4) {
			wg.Go(func() {
				res, err := b.Do(t.Context(), "k", i)
				if err != nil || res != result("k", i) {
					t.Errorf("%d: %q, %v", i, res, err)
				}
			})
		}
		require.NoError(t, b.Stop(t.Context()))
		wg.Wait()
	}
}
