//go:build integration

package store

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
)

// BenchmarkComplete measures the batch completion statement alone, on a
// generic-plan session as the node's hot pool runs it: b.N todos, claimed
// beforehand (untimed) 100 at a time, completed in batches of 100, one
// statement each. "limited" completes todos of a limited queue with 10
// keys, so every batch also releases key and queue counters. Run:
//
//	go test -tags integration -run '^$' -bench Complete -benchtime 20000x ./queue/internal/store/
func BenchmarkComplete(b *testing.B) {
	for _, tc := range []struct {
		name  string
		limit bool
	}{{"plain", false}, {"limited", true}} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := b.Context()
			pool := pgtest.GenericPlanPool(b)
			// The statement is measured, not the disk: the commit does not wait for its flush (the pool's one
			// session keeps the setting).
			_, err := pool.Exec(ctx, `SET synchronous_commit = off`)
			require.NoError(b, err)
			s := New(pool, pool)
			var human uuid.UUID
			require.NoError(b, pool.QueryRow(ctx, `INSERT INTO humans (email) VALUES ('bench@example.test') RETURNING id`).Scan(&human))
			_, err = pool.Exec(ctx, `INSERT INTO todos (human_id, queue, concurrency_key)
				SELECT $1, 'q', CASE WHEN $3 THEN 'k' || (i % 10) END FROM generate_series(1, $2::int) AS i`, human, b.N, tc.limit)
			require.NoError(b, err)
			// Statistics as a live table has them: planned over an empty one, a generic plan may scan the tenant.
			_, err = pool.Exec(ctx, `ANALYZE todos`)
			require.NoError(b, err)
			c := Caller{HumanID: human}
			if tc.limit {
				_, err = s.SetLimits(ctx, c, "q", Limits{MaxRunning: 1_000_000, KeyMaxRunning: 1_000_000})
				require.NoError(b, err)
			}
			var batches [][]CompleteItem
			for {
				claimed, err := s.Claim(ctx, c, ClaimArgs{Queue: "q", Worker: "w", Max: 100, LeaseSeconds: 3600})
				require.NoError(b, err)
				if len(claimed) == 0 {
					break
				}
				items := make([]CompleteItem, len(claimed))
				for i, t := range claimed {
					items[i] = CompleteItem{Lease: Lease{ID: t.ID, Token: *t.LeaseToken}}
				}
				batches = append(batches, items)
			}
			b.ResetTimer()
			for _, items := range batches {
				res, err := s.Complete(ctx, c, items)
				require.NoError(b, err)
				require.Equal(b, OK, res[0].Outcome)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "todos/s")
		})
	}
}
