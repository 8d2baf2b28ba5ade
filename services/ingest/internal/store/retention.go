package store

import (
	"context"
	"fmt"

	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/ingest/internal/store/dbsqlc"
)

// PruneOnce applies retention.events now (settings.Prune), except to events
// whose todo is still live (its worker reads the event).
func (s *Store) PruneOnce(ctx context.Context, batch int32, maxBatches int) (int64, error) {
	return settings.Prune{
		Key: settings.RetentionEvents, Default: settings.DefaultRetentionEvents,
		ByAge: s.pruneByAge, OverCap: s.pruneOverCap, Batch: batch, MaxBatches: maxBatches,
	}.Once(ctx, s.pool)
}

// pruneByAge deletes up to batch events older than r's age bound whose todo
// is not live.
func (s *Store) pruneByAge(ctx context.Context, r settings.Retention, batch int32) (int64, error) {
	n, err := s.q.EventPruneByAge(ctx, s.pool, dbsqlc.EventPruneByAgeParams{MaxAgeSeconds: r.MaxAge().Seconds(), BatchSize: batch})
	if err != nil {
		return 0, fmt.Errorf("ingest: prune events by age: %w", err)
	}
	return n, nil
}

// pruneOverCap deletes up to batch of the oldest events beyond the newest
// r.MaxRows whose todo is not live.
func (s *Store) pruneOverCap(ctx context.Context, r settings.Retention, batch int32) (int64, error) {
	n, err := s.q.EventPruneOverCap(ctx, s.pool, dbsqlc.EventPruneOverCapParams{MaxRows: r.MaxRows, BatchSize: batch})
	if err != nil {
		return 0, fmt.Errorf("ingest: prune events over cap: %w", err)
	}
	return n, nil
}
