package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard/switchboard/services/ingest/internal/store/dbsqlc"
)

// Pool is the store's pool, for the settings the service reads.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// PruneByAge deletes up to batch events older than maxAge whose todo is not
// live; it returns how many.
func (s *Store) PruneByAge(ctx context.Context, maxAge time.Duration, batch int32) (int64, error) {
	n, err := s.q.EventPruneByAge(ctx, s.pool, dbsqlc.EventPruneByAgeParams{MaxAgeSeconds: maxAge.Seconds(), BatchSize: batch})
	if err != nil {
		return 0, fmt.Errorf("ingest: prune events by age: %w", err)
	}
	return n, nil
}

// PruneOverCap deletes up to batch of the oldest events beyond the newest
// maxRows whose todo is not live; it returns how many.
func (s *Store) PruneOverCap(ctx context.Context, maxRows int64, batch int32) (int64, error) {
	n, err := s.q.EventPruneOverCap(ctx, s.pool, dbsqlc.EventPruneOverCapParams{MaxRows: maxRows, BatchSize: batch})
	if err != nil {
		return 0, fmt.Errorf("ingest: prune events over cap: %w", err)
	}
	return n, nil
}
