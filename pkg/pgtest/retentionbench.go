//go:build integration || e2e

package pgtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// RetentionBench is one table's retention benchmark (BenchRetention): the
// same passes over the same 2,000,000 rows of 50 tenants for every table a
// retention.* setting prunes, so that their figures compare.
type RetentionBench struct {
	// Table is the pruned table; Key its retention.* setting, and
	// MaxAgeSeconds the age bound every value of the benchmark keeps (far
	// beyond the rows' age: the row caps are what is measured).
	Table, Key    string
	MaxAgeSeconds int64
	// Insert is a statement that adds $2 rows round robin over the tenants
	// $1 (uuid[]), each of them older than the rows of any later Insert.
	Insert string
	// Node returns one pass on a new node's pruner: a node's first pass
	// reads every tenant, its later ones only what was written since.
	Node func(pool *pgxpool.Pool) func(context.Context) error
}

// BenchRetention times retention passes (ms per pass, "pass-ms"):
//
//   - first: a node's first pass over 2,000,000 rows, 40,000 for each of 50
//     tenants, with nothing to delete (every tenant under its cap, the table
//     under max_rows);
//   - steady: a later pass, after 1,000 more rows;
//   - flood: every tenant at its cap of 40,000 and max_rows the table's
//     size; one tenant writes 5,000 more, then a pass. "victim-rows" counts
//     the other tenants' rows that pass deleted (issue 31: 0 is the goal).
//
// It drives only the service's pass and SQL, so the same benchmark
// measures any version of the service.
func BenchRetention(b *testing.B, rb RetentionBench) {
	pool := NewPool(b)
	exec := func(sql string, args ...any) {
		b.Helper()
		if _, err := pool.Exec(b.Context(), sql, args...); err != nil {
			b.Fatalf("%s: %v", sql, err)
		}
	}
	var tenants []uuid.UUID
	if err := pool.QueryRow(b.Context(), `WITH h AS (INSERT INTO humans (email)
		SELECT 'bench' || g || '@example.test' FROM generate_series(1, 50) AS g RETURNING id)
		SELECT array_agg(id) FROM h`).Scan(&tenants); err != nil {
		b.Fatal(err)
	}
	exec(rb.Insert, tenants, 2_000_000)
	exec(`VACUUM ANALYZE ` + rb.Table)
	limits := func(maxRows, perTenant int) {
		exec(`UPDATE settings SET value = $1 WHERE key = $2`,
			fmt.Sprintf(`{"max_age_seconds": %d, "max_rows": %d, "max_rows_per_tenant": %d}`, rb.MaxAgeSeconds, maxRows, perTenant), rb.Key)
	}
	limits(10_000_000, 100_000)

	var elapsed time.Duration
	pass := func(node func(context.Context) error) {
		start := time.Now()
		err := node(b.Context())
		elapsed += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
	}
	report := func(b *testing.B) { b.ReportMetric(elapsed.Seconds()*1000/float64(b.N), "pass-ms") }

	b.Run("first", func(b *testing.B) {
		elapsed = 0
		for b.Loop() {
			pass(rb.Node(pool))
		}
		report(b)
	})
	b.Run("steady", func(b *testing.B) {
		node := rb.Node(pool)
		pass(node)
		elapsed = 0
		for b.Loop() {
			exec(rb.Insert, tenants, 1000)
			pass(node)
		}
		report(b)
	})
	b.Run("flood", func(b *testing.B) {
		exec(`DELETE FROM `+rb.Table+` WHERE id > $1`, 2_000_000) // steady's: 40,000 each again
		limits(2_000_000, 40_000)
		node := rb.Node(pool)
		pass(node)
		elapsed = 0
		var victims int64
		others := func() int64 {
			var n int64
			if err := pool.QueryRow(b.Context(), `SELECT count(*) FROM `+rb.Table+` WHERE human_id <> $1`, tenants[0]).Scan(&n); err != nil {
				b.Fatal(err)
			}
			return n
		}
		for b.Loop() {
			exec(rb.Insert, tenants[:1], 5000)
			before := others()
			pass(node)
			victims += before - others()
		}
		report(b)
		b.ReportMetric(float64(victims)/float64(b.N), "victim-rows")
	})
}
