package settings

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestFillCutsTheLargestFirst: the level is the largest at which the table
// fits; tenants below it keep everything, the room left over goes one row
// each to the cut tenants holding the fewest, and the table ends exactly
// full.
func TestFillCutsTheLargestFirst(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		rows    []int64 // largest first
		maxRows int64
		keep    []int64 // for the cut ones, in the same order
		level   int64
	}{
		{"one flooding tenant", []int64{100, 5, 3}, 50, []int64{42}, 42},
		{"two cut to one level", []int64{9, 6, 2}, 10, []int64{4, 4}, 4},
		{"the smaller cut one keeps the spare row", []int64{8, 5, 1}, 10, []int64{4, 5}, 4},
		{"all cut, spare rows to the smallest", []int64{7, 7, 7}, 10, []int64{3, 3, 4}, 3},
		{"room for nothing but the others", []int64{4, 1, 1}, 2, []int64{0, 1, 1}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			counts := make([]TenantRows, len(c.rows))
			for i, n := range c.rows {
				counts[i] = TenantRows{Tenant: uuid.New(), Rows: n}
			}
			keep, level := fill(counts, c.maxRows)
			require.Equal(t, c.level, level)
			require.Len(t, keep, len(c.keep))
			var total int64
			for i, k := range c.keep {
				require.Equal(t, k, keep[counts[i].Tenant], "tenant %d", i)
			}
			for _, cnt := range counts {
				if k, cut := keep[cnt.Tenant]; cut {
					total += k
				} else {
					total += cnt.Rows
				}
			}
			require.Equal(t, c.maxRows, total, "the table ends exactly full")
		})
	}
}
