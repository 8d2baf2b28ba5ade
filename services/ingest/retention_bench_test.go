//go:build integration

package ingest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/ingest"
)

// BenchmarkRetentionPass times retention passes over events
// (pgtest.BenchRetention: 2,000,000 of 50 tenants, stored round robin, no
// todos):
//
//	go test -tags integration -run '^$' -bench RetentionPass -benchtime 3x -timeout 30m ./services/ingest/
func BenchmarkRetentionPass(b *testing.B) {
	pgtest.BenchRetention(b, pgtest.RetentionBench{
		Table: "events", Key: "retention.events", MaxAgeSeconds: 2592000,
		Insert: `INSERT INTO events (human_id, source, payload, size_bytes)
			SELECT ($1::uuid[])[1 + g % cardinality($1::uuid[])], 'publish', ''::bytea, 0 FROM generate_series(1, $2) AS g`,
		Node: func(pool *pgxpool.Pool) func(context.Context) error {
			srv := ingest.New(zap.NewNop(), pool, ingest.Options{})
			return func(ctx context.Context) error { _, err := srv.PruneOnce(ctx); return err }
		},
	})
}
