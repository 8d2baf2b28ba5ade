//go:build integration

package queue_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/queue"
)

// BenchmarkRetentionPass times retention passes over 2,000,000 completed
// todos of 50 tenants (40,000 each, finished round robin). It uses only
// the service's PruneOnce and SQL, so the same file measures any version
// (issue 31 compared the global cap's with the per-tenant caps'):
//
//	go test -tags integration -run '^$' -bench RetentionPass -benchtime 3x -timeout 30m ./services/queue/
//
// pass-ms is one pass (an op also writes the rows the pass then finds):
//
//   - first: a node's first pass, nothing to delete (every tenant under its
//     cap, the table under max_rows);
//   - steady: a later pass, after 1,000 more todos finished;
//   - flood: every tenant at its cap of 40,000 and max_rows the table's
//     size; one tenant finishes 5,000 more, then a pass. victim-rows counts
//     the other tenants' finished todos that pass deleted.
func BenchmarkRetentionPass(b *testing.B) {
	pool := pgtest.NewPool(b)
	tenants := seedTenants(b, pool, 50)
	exec := func(sql string, args ...any) {
		_, err := pool.Exec(b.Context(), sql, args...)
		require.NoError(b, err)
	}
	exec(`INSERT INTO todos (human_id, queue, state, attempt, finished_at)
		SELECT ($1::uuid[])[1 + g % 50], 'bench', 'completed', 1, now() - interval '1 hour' + g * interval '1 ms'
		FROM generate_series(0, 1999999) AS g`, tenants)
	exec(`VACUUM ANALYZE todos`)
	setting := `UPDATE settings SET value = $1 WHERE key = 'retention.todos'`
	exec(setting, `{"max_age_seconds": 604800, "max_rows": 10000000, "max_rows_per_tenant": 1000000}`)
	newServer := func() *queue.Server { return queue.New(zap.NewNop(), pool, queue.Options{RetentionBatch: 1000}) }
	var elapsed time.Duration
	pass := func(srv *queue.Server) {
		start := time.Now()
		_, err := srv.PruneOnce(b.Context())
		elapsed += time.Since(start)
		require.NoError(b, err)
	}
	report := func(b *testing.B) { b.ReportMetric(elapsed.Seconds()*1000/float64(b.N), "pass-ms") }

	b.Run("first", func(b *testing.B) {
		elapsed = 0
		for b.Loop() {
			pass(newServer())
		}
		report(b)
	})
	b.Run("steady", func(b *testing.B) {
		srv := newServer()
		pass(srv)
		elapsed = 0
		for b.Loop() {
			exec(`INSERT INTO todos (human_id, queue, state, attempt, finished_at)
				SELECT ($1::uuid[])[1 + g % 50], 'bench', 'completed', 1, now() FROM generate_series(0, 999) AS g`, tenants)
			pass(srv)
		}
		report(b)
	})
	b.Run("flood", func(b *testing.B) {
		exec(`DELETE FROM todos WHERE id > 2000000`) // steady's: 40,000 each again
		exec(setting, `{"max_age_seconds": 604800, "max_rows": 2000000, "max_rows_per_tenant": 40000}`)
		srv := newServer()
		pass(srv)
		elapsed = 0
		var victims int64
		others := func() int64 {
			var n int64
			require.NoError(b, pool.QueryRow(b.Context(), `SELECT count(*) FROM todos WHERE human_id <> $1`, tenants[0]).Scan(&n))
			return n
		}
		for b.Loop() {
			exec(`INSERT INTO todos (human_id, queue, state, attempt, finished_at)
				SELECT $1, 'bench', 'completed', 1, now() FROM generate_series(1, 5000)`, tenants[0])
			before := others()
			pass(srv)
			victims += before - others()
		}
		report(b)
		b.ReportMetric(float64(victims)/float64(b.N), "victim-rows")
	})
}

// seedTenants inserts n humans and returns their ids.
func seedTenants(b *testing.B, pool *pgxpool.Pool, n int) []uuid.UUID {
	b.Helper()
	rows, err := pool.Query(b.Context(), `INSERT INTO humans (email) SELECT 'bench' || g || '@example.test' FROM generate_series(1, $1) AS g RETURNING id`, n)
	require.NoError(b, err)
	var ids []uuid.UUID
	for rows.Next() {
		var id uuid.UUID
		require.NoError(b, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(b, rows.Err())
	return ids
}
