package groupcommit_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/groupcommit"
)

// TestMaxSize: with a Size, a statement carries items in arrival order
// while their sizes sum to at most MaxSize; an item larger than MaxSize
// goes alone, and MaxItems still applies.
func TestMaxSize(t *testing.T) {
	t.Parallel()
	tb := setup(t, groupcommit.Options[int64]{MaxItems: 4, MaxSize: 10, Size: func(item int64) int { return int(item) }}, true)
	tb.start(t)
	held, heldOut := tb.hold(t)
	items := []int64{3, 4, 3, 9, 20, 1, 1, 1, 1, 1}
	outs := make([]<-chan outcome, len(items))
	for i, it := range items {
		outs[i] = do(t.Context(), tb.b, "k", it)
		tb.queued(t, i+1) // one at a time: arrival order is known
	}
	held.ok()
	recv(t, heldOut)
	var chunks [][]int64
	for range 5 { // sent in parallel: in any order
		s := recv(t, tb.db.stmts)
		chunks = append(chunks, s.items)
		s.ok()
	}
	require.ElementsMatch(t, [][]int64{{3, 4, 3}, {9}, {20}, {1, 1, 1, 1}, {1}}, chunks)
	for i, out := range outs {
		require.Equal(t, outcome{res: result("k", items[i])}, recv(t, out))
	}
	tb.noStatement(t)
}

// TestRetryDecides: when Retry refuses an error, every item of the failed
// batch gets it and nothing is sent again; an error it accepts is retried
// item by item as without it.
func TestRetryDecides(t *testing.T) {
	t.Parallel()
	errAmbiguous := errors.New("connection lost after send")
	tb := setup(t, groupcommit.Options[int64]{Retry: func(err error) bool { return !errors.Is(err, errAmbiguous) }}, false)
	tb.start(t)

	held, heldOut := tb.hold(t)
	a, b := do(t.Context(), tb.b, "k", 1), do(t.Context(), tb.b, "k", 2)
	tb.queued(t, 2)
	held.ok()
	recv(t, heldOut)
	recv(t, tb.db.stmts).fail(errAmbiguous)
	require.Equal(t, outcome{err: errAmbiguous}, recv(t, a))
	require.Equal(t, outcome{err: errAmbiguous}, recv(t, b))
	require.Equal(t, []int{1, 2}, tb.db.hooked(), "no retry")

	held, heldOut = tb.hold(t)
	c, d := do(t.Context(), tb.b, "k", 3), do(t.Context(), tb.b, "k", 4)
	tb.queued(t, 2)
	held.ok()
	recv(t, heldOut)
	recv(t, tb.db.stmts).fail(errBoom)
	recv(t, tb.db.stmts).fail(errBoom)
	recv(t, tb.db.stmts).ok()
	require.Equal(t, outcome{err: errBoom}, recv(t, c))
	require.Equal(t, outcome{res: "k/4"}, recv(t, d))
	require.Equal(t, []int{1, 2, 1, 2, 1, 1}, tb.db.hooked())
}
