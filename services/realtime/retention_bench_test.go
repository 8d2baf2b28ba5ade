//go:build integration

package realtime_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/realtime"
)

// BenchmarkRetentionPass times retention passes over durable events
// (pgtest.BenchRetention: 2,000,000 of 50 tenants, published round robin):
//
//	go test -tags integration -run '^$' -bench RetentionPass -benchtime 3x -timeout 30m ./services/realtime/
func BenchmarkRetentionPass(b *testing.B) {
	pgtest.BenchRetention(b, pgtest.RetentionBench{
		Table: "realtime_events", Key: "retention.realtime_events", MaxAgeSeconds: 86400,
		Insert: `INSERT INTO realtime_events (human_id, channel, payload)
			SELECT ($1::uuid[])[1 + g % cardinality($1::uuid[])], 'bench', '{}' FROM generate_series(1, $2) AS g`,
		Node: func(pool *pgxpool.Pool) func(context.Context) error {
			srv := realtime.New(zap.NewNop(), pool, realtime.Options{RetentionBatch: 1000})
			return func(ctx context.Context) error { _, err := srv.PruneOnce(ctx); return err }
		},
	})
}
