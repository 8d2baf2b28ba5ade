package store

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard/switchboard/services/ingest/internal/store/dbsqlc"
)

// Retention is the setting retention.events.
type Retention struct {
	MaxAge  time.Duration
	MaxRows int64
}

// RetentionSettings reads retention.events.
func (s *Store) RetentionSettings(ctx context.Context) (Retention, error) {
	r, err := s.q.EventRetentionSettings(ctx, s.pool)
	if err != nil {
		return Retention{}, fmt.Errorf("ingest: retention settings: %w", err)
	}
	return Retention{MaxAge: time.Duration(r.MaxAgeSeconds) * time.Second, MaxRows: r.MaxRows}, nil
}

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
