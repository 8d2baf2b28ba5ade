//go:build integration

package queue_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/queue"
)

// BenchmarkRetentionPass times retention passes over finished todos
// (pgtest.BenchRetention: 2,000,000 of 50 tenants, finished round robin in
// the order of their ids):
//
//	go test -tags integration -run '^$' -bench RetentionPass -benchtime 3x -timeout 30m ./services/queue/
func BenchmarkRetentionPass(b *testing.B) {
	pgtest.BenchRetention(b, pgtest.RetentionBench{
		Table: "todos", Key: "retention.todos", MaxAgeSeconds: 604800,
		// clock_timestamp(): each row finishes after the one before, and
		// after every row of an earlier statement.
		Insert: `INSERT INTO todos (human_id, queue, state, attempt, finished_at)
			SELECT ($1::uuid[])[1 + g % cardinality($1::uuid[])], 'bench', 'completed', 1, clock_timestamp()
			FROM generate_series(1, $2) AS g`,
		Node: func(pool *pgxpool.Pool) func(context.Context) error {
			srv := queue.New(zap.NewNop(), pool, queue.Options{RetentionBatch: 1000})
			return func(ctx context.Context) error { _, err := srv.PruneOnce(ctx); return err }
		},
	})
}
