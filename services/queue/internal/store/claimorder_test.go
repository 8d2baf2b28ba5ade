package store

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClaimOrder: rows come back by priority, then run_at, then id, from any
// order RETURNING gives them in; rows already in order are not copied.
func TestClaimOrder(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	var want []Todo
	for i := range 300 {
		// Priorities and run_at values repeat, so every tie-break is used.
		want = append(want, Todo{ID: int64(i + 1), Priority: int16(i / 100), RunAt: base.Add(time.Duration(i%100/10) * time.Second)})
	}
	slices.SortFunc(want, func(x, y Todo) int {
		if c := int(x.Priority) - int(y.Priority); c != 0 {
			return c
		}
		if c := x.RunAt.Compare(y.RunAt); c != 0 {
			return c
		}
		return int(x.ID - y.ID)
	})
	ids := func(ts []Todo) []int64 {
		out := make([]int64, len(ts))
		for i, td := range ts {
			out[i] = td.ID
		}
		return out
	}

	t.Run("shuffled", func(t *testing.T) {
		t.Parallel()
		rows := slices.Clone(want)
		rand.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		got := claimOrder(rows)
		require.Equal(t, ids(want), ids(got))
	})
	t.Run("in order", func(t *testing.T) {
		t.Parallel()
		rows := slices.Clone(want)
		got := claimOrder(rows)
		require.Equal(t, ids(want), ids(got))
		require.Same(t, &rows[0], &got[0], "rows in order are returned as they are")
	})
	t.Run("empty and one", func(t *testing.T) {
		t.Parallel()
		require.Empty(t, claimOrder(nil))
		require.Equal(t, []int64{7}, ids(claimOrder([]Todo{{ID: 7}})))
	})
}
