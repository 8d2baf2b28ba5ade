package groupcommit_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/groupcommit"
)

var errBoom = errors.New("boom")

// TestWindowFromOldest: the flush runs one window after the OLDEST queued
// item arrived, carrying what came later too; when the oldest gives up, the
// window runs from the next oldest.
func TestWindowFromOldest(t *testing.T) {
	t.Parallel()
	const window = 50 * time.Millisecond

	t.Run("later items ride along", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, groupcommit.Options[int64]{Window: window}, false)
		tb.start(t)
		t0 := tb.clk.Now()
		a := do(t.Context(), tb.b, "k", 1)
		require.Equal(t, t0.Add(window), recv(t, tb.clk.armed))
		tb.clk.Advance(30 * time.Millisecond)
		b := do(t.Context(), tb.b, "k", 2)
		tb.queued(t, 2)
		tb.noStatement(t)

		tb.clk.Advance(20 * time.Millisecond) // the oldest's window has passed, not the newest's
		s := recv(t, tb.db.stmts)
		require.Equal(t, []int64{1, 2}, s.items)
		s.ok()
		require.Equal(t, outcome{res: "k/1"}, recv(t, a))
		require.Equal(t, outcome{res: "k/2"}, recv(t, b))
	})

	t.Run("the oldest gives up", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, groupcommit.Options[int64]{Window: window}, false)
		tb.start(t)
		t0 := tb.clk.Now()
		ctx, cancel := context.WithCancel(t.Context())
		a := do(ctx, tb.b, "k", 1)
		require.Equal(t, t0.Add(window), recv(t, tb.clk.armed))
		tb.clk.Advance(30 * time.Millisecond)
		b := do(t.Context(), tb.b, "k", 2)
		tb.queued(t, 2)
		cancel()
		require.ErrorIs(t, recv(t, a).err, context.Canceled)

		tb.clk.Advance(20 * time.Millisecond)
		tb.clk.waitArmed(t, t0.Add(30*time.Millisecond+window)) // the window of the second
		tb.noStatement(t)
		tb.clk.Advance(30 * time.Millisecond)
		s := recv(t, tb.db.stmts)
		require.Equal(t, []int64{2}, s.items)
		s.ok()
		require.Equal(t, outcome{res: "k/2"}, recv(t, b))
	})
}

// TestMaxItems: a full queue is flushed at once, however long the window,
// and MaxItems bounds one statement: a bigger queue goes as parallel chunks.
func TestMaxItems(t *testing.T) {
	t.Parallel()
	tb := setup(t, groupcommit.Options[int64]{Window: time.Hour, MaxItems: 3}, false)
	tb.start(t)
	var outs []<-chan outcome
	for i := range int64(3) {
		outs = append(outs, do(t.Context(), tb.b, "k", i+1))
	}
	first := recv(t, tb.db.stmts) // no clock moved
	require.Equal(t, []int64{1, 2, 3}, first.items)

	// While it runs, 7 more queue up: the next flush sends them as 3+3+1,
	// all three in flight at once.
	for i := range int64(7) {
		outs = append(outs, do(t.Context(), tb.b, "k", 10-i))
	}
	tb.queued(t, 7)
	tb.noStatement(t)
	first.ok()
	var chunks [][]int64
	var stmts []*stmt
	for range 3 {
		s := recv(t, tb.db.stmts)
		stmts = append(stmts, s)
		chunks = append(chunks, s.items)
	}
	slices.SortFunc(chunks, func(a, b []int64) int { return cmp.Compare(a[0], b[0]) })
	require.Equal(t, [][]int64{{4, 5, 6}, {7, 8, 9}, {10}}, chunks)
	for _, s := range stmts {
		s.ok()
	}
	for i, out := range outs {
		want := []int64{1, 2, 3, 10, 9, 8, 7, 6, 5, 4}[i]
		require.Equal(t, outcome{res: result("k", want)}, recv(t, out))
	}
	require.ElementsMatch(t, []int{3, 3, 3, 1}, tb.db.hooked())
}

// TestOneFlushAtATime: with a zero window, items arriving while a flush
// runs wait for it and then share the next statement.
func TestOneFlushAtATime(t *testing.T) {
	t.Parallel()
	tb := setup(t, groupcommit.Options[int64]{}, false)
	tb.start(t)
	held, heldOut := tb.hold(t)
	a := do(t.Context(), tb.b, "k", 1)
	b := do(t.Context(), tb.b, "k", 2)
	tb.queued(t, 2)
	tb.noStatement(t)
	held.ok()
	require.Equal(t, outcome{res: "hold/0"}, recv(t, heldOut))
	s := recv(t, tb.db.stmts)
	require.Equal(t, []int64{1, 2}, s.items)
	s.ok()
	require.Equal(t, outcome{res: "k/1"}, recv(t, a))
	require.Equal(t, outcome{res: "k/2"}, recv(t, b))
}

// TestGroups: one statement per key, sent in parallel; exec gets the key.
func TestGroups(t *testing.T) {
	t.Parallel()
	tb := setup(t, groupcommit.Options[int64]{}, false)
	tb.start(t)
	held, heldOut := tb.hold(t)
	a1 := do(t.Context(), tb.b, "a", 1)
	b1 := do(t.Context(), tb.b, "b", 1)
	a2 := do(t.Context(), tb.b, "a", 2)
	tb.queued(t, 3)
	held.ok()
	recv(t, heldOut)
	s1, s2 := recv(t, tb.db.stmts), recv(t, tb.db.stmts) // both in flight
	if s1.key != "a" {
		s1, s2 = s2, s1
	}
	require.Equal(t, "a", s1.key)
	require.Equal(t, []int64{1, 2}, s1.items)
	require.Equal(t, "b", s2.key)
	require.Equal(t, []int64{1}, s2.items)
	s2.fail(errBoom) // a batch of one is not retried
	require.Equal(t, outcome{err: errBoom}, recv(t, b1))
	s1.ok()
	require.Equal(t, outcome{res: "a/1"}, recv(t, a1))
	require.Equal(t, outcome{res: "a/2"}, recv(t, a2))
	tb.noStatement(t)
}

// TestIdentity: with an ID, an id is sent once per group and flush (the
// second waits for the next flush) and a group goes in ascending id order;
// without one, items keep their arrival order and duplicates ride together.
func TestIdentity(t *testing.T) {
	t.Parallel()

	t.Run("with ID", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, groupcommit.Options[int64]{}, false)
		tb.start(t)
		held, heldOut := tb.hold(t)
		outs := map[string]<-chan outcome{}
		for _, it := range []struct {
			name string
			key  string
			item int64
		}{{"a5", "a", 5}, {"a3", "a", 3}, {"a5 again", "a", 5}, {"a9", "a", 9}, {"a1", "a", 1}, {"b5", "b", 5}} {
			outs[it.name] = do(t.Context(), tb.b, it.key, it.item)
			tb.queued(t, len(outs)) // one at a time: arrival order is known
		}
		held.ok()
		recv(t, heldOut)
		s1, s2 := recv(t, tb.db.stmts), recv(t, tb.db.stmts)
		if s1.key != "a" {
			s1, s2 = s2, s1
		}
		require.Equal(t, []int64{1, 3, 5, 9}, s1.items)
		require.Equal(t, []int64{5}, s2.items)
		s1.ok()
		s2.ok()
		for _, name := range []string{"a5", "a3", "a9", "a1", "b5"} {
			require.NoError(t, recv(t, outs[name]).err, name)
		}
		again := recv(t, tb.db.stmts) // the next flush
		require.Equal(t, []int64{5}, again.items)
		require.Empty(t, outs["a5 again"], "waits for its own statement")
		again.fail(errBoom)
		require.Equal(t, outcome{err: errBoom}, recv(t, outs["a5 again"]))
	})

	t.Run("without ID", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, groupcommit.Options[int64]{}, true)
		tb.start(t)
		held, heldOut := tb.hold(t)
		var outs []<-chan outcome
		for i, it := range []int64{5, 3, 5} {
			outs = append(outs, do(t.Context(), tb.b, "a", it))
			tb.queued(t, i+1)
		}
		held.ok()
		recv(t, heldOut)
		s := recv(t, tb.db.stmts)
		require.Equal(t, []int64{5, 3, 5}, s.items)
		s.reply <- reply{res: []string{"x", "y", "z"}}
		for i, want := range []string{"x", "y", "z"} {
			require.Equal(t, outcome{res: want}, recv(t, outs[i]))
		}
	})
}

// TestFailedBatchRetriesEachAlone: a failed batch statement is retried item
// by item, in order, and each caller gets its own item's outcome.
func TestFailedBatchRetriesEachAlone(t *testing.T) {
	t.Parallel()
	tb := setup(t, groupcommit.Options[int64]{}, false)
	tb.start(t)
	held, heldOut := tb.hold(t)
	outs := map[int64]<-chan outcome{}
	for _, it := range []int64{3, 1, 2} {
		outs[it] = do(t.Context(), tb.b, "k", it)
	}
	tb.queued(t, 3)
	held.ok()
	recv(t, heldOut)
	batch := recv(t, tb.db.stmts)
	require.Equal(t, []int64{1, 2, 3}, batch.items)
	batch.fail(errBoom)
	errBad := errors.New("bad item")
	for _, want := range []int64{1, 2, 3} {
		s := recv(t, tb.db.stmts)
		require.Equal(t, []int64{want}, s.items)
		if want == 2 {
			s.fail(errBad)
		} else {
			s.ok()
		}
	}
	require.Equal(t, outcome{res: "k/1"}, recv(t, outs[1]))
	require.Equal(t, outcome{err: errBad}, recv(t, outs[2]))
	require.Equal(t, outcome{res: "k/3"}, recv(t, outs[3]))
	require.Equal(t, []int{1, 3, 1, 1, 1}, tb.db.hooked())
}

// TestBrokenExecContract: exec returning the wrong number of results is an
// error, never a panic or a wrong result.
func TestBrokenExecContract(t *testing.T) {
	t.Parallel()
	tb := setup(t, groupcommit.Options[int64]{}, false)
	tb.start(t)
	out := do(t.Context(), tb.b, "k", 1)
	s := recv(t, tb.db.stmts)
	s.reply <- reply{res: []string{"x", "y"}}
	require.ErrorContains(t, recv(t, out).err, "2 results for 1 items")
}

// TestConcurrent: many callers on the real clock, some batches failing:
// every caller gets its own item's result, and no statement breaks the
// shape (one key, at most MaxItems, ids unique and ascending).
func TestConcurrent(t *testing.T) {
	t.Parallel()
	const maxItems = 7
	var mu sync.Mutex
	stmts, failed := 0, 0
	exec := func(ctx context.Context, key string, items []int64) ([]string, error) {
		mu.Lock()
		defer mu.Unlock()
		stmts++
		if len(items) > maxItems || !slices.IsSorted(items) || len(slices.Compact(slices.Clone(items))) != len(items) {
			return nil, fmt.Errorf("bad statement %s %v", key, items)
		}
		if len(items) > 1 && stmts%3 == 0 {
			failed++
			return nil, errBoom // retried one by one
		}
		res := make([]string, len(items))
		for i, it := range items {
			res[i] = result(key, it)
		}
		return res, nil
	}
	b := groupcommit.New("test", exec, groupcommit.Options[int64]{
		Window: 100 * time.Microsecond, MaxItems: maxItems, ID: func(i int64) int64 { return i },
	})
	require.NoError(t, b.Start(t.Context()))
	var wg sync.WaitGroup
	for g := range 300 {
		wg.Go(func() {
			key, item := fmt.Sprint(g%3), int64(g%20)
			res, err := b.Do(t.Context(), key, item)
			if err != nil || res != result(key, item) {
				t.Errorf("%s/%d: %q, %v", key, item, res, err)
			}
		})
	}
	wg.Wait()
	require.NoError(t, b.Stop(t.Context()))
	t.Logf("300 calls in %d statements, %d batches failed", stmts, failed)
}

// TestOnFlushSeesBatchesNotRetries: OnFlush (the batch-size metric) is told
// of each batch the flusher sends, not of the one-by-one retries of a failed
// batch nor of direct calls before Start.
func TestOnFlushSeesBatchesNotRetries(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var flushed []int
	tb := setup(t, groupcommit.Options[int64]{OnFlush: func(n int) {
		mu.Lock()
		defer mu.Unlock()
		flushed = append(flushed, n)
	}}, false)
	direct := do(t.Context(), tb.b, "k", 9) // before Start: runs on its own
	recv(t, tb.db.stmts).ok()
	recv(t, direct)
	tb.start(t)
	held, heldOut := tb.hold(t)
	outs := []<-chan outcome{do(t.Context(), tb.b, "k", 1), do(t.Context(), tb.b, "k", 2)}
	tb.queued(t, 2)
	held.ok()
	recv(t, heldOut)
	recv(t, tb.db.stmts).fail(errBoom)
	for range 2 {
		recv(t, tb.db.stmts).ok()
	}
	for _, out := range outs {
		require.NoError(t, recv(t, out).err)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int{1, 2}, flushed, "the held item's batch, then the pair; not the direct call, not the retries")
}

// TestFlushers: with Flushers 2 the next flush starts while the first one's
// statement is still in flight, taking everything queued; a third waits
// until one of them has ended.
func TestFlushers(t *testing.T) {
	t.Parallel()
	tb := setup(t, groupcommit.Options[int64]{Flushers: 2}, true)
	tb.start(t)
	held, heldOut := tb.hold(t)
	a := do(t.Context(), tb.b, "k", 1)
	second := recv(t, tb.db.stmts) // sent while "hold" is in flight
	require.Equal(t, []int64{1}, second.items)
	b := do(t.Context(), tb.b, "k", 2)
	c := do(t.Context(), tb.b, "k", 3)
	tb.queued(t, 2)
	tb.noStatement(t) // both flushers are busy
	second.ok()
	require.Equal(t, outcome{res: "k/1"}, recv(t, a))
	third := recv(t, tb.db.stmts)
	require.ElementsMatch(t, []int64{2, 3}, third.items, "the whole queue, in one statement")
	third.ok()
	require.Equal(t, outcome{res: "k/2"}, recv(t, b))
	require.Equal(t, outcome{res: "k/3"}, recv(t, c))
	held.ok()
	require.Equal(t, outcome{res: "hold/0"}, recv(t, heldOut))
}

// TestFlushersNeedNoID: with an ID, Flushers is ignored (one flush at a
// time), since an id is promised once per flush.
func TestFlushersNeedNoID(t *testing.T) {
	t.Parallel()
	tb := setup(t, groupcommit.Options[int64]{Flushers: 2}, false)
	tb.start(t)
	held, heldOut := tb.hold(t)
	a := do(t.Context(), tb.b, "k", 1)
	tb.queued(t, 1)
	tb.noStatement(t)
	held.ok()
	require.Equal(t, outcome{res: "hold/0"}, recv(t, heldOut))
	s := recv(t, tb.db.stmts)
	s.ok()
	require.Equal(t, outcome{res: "k/1"}, recv(t, a))
}
