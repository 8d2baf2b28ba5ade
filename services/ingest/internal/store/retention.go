package store

import (
	"context"

	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/ingest/internal/store/dbsqlc"
)

// PruneOnce applies retention.events now (settings.Prune), except to events
// whose todo is still live (its worker reads the event).
func (s *Store) PruneOnce(ctx context.Context, batch int32, maxBatches int) (int64, error) {
	return settings.Prune{
		Key: settings.RetentionEvents, Default: settings.DefaultRetentionEvents,
		ByAge: func(ctx context.Context, r settings.Retention, n int32) (int64, error) {
			return s.q.EventPruneByAge(ctx, s.pool, dbsqlc.EventPruneByAgeParams{MaxAgeSeconds: r.MaxAge().Seconds(), BatchSize: n})
		},
		OverCap: func(ctx context.Context, r settings.Retention, n int32) (int64, error) {
			return s.q.EventPruneOverCap(ctx, s.pool, dbsqlc.EventPruneOverCapParams{MaxRows: r.MaxRows, BatchSize: n})
		},
		Batch: batch, MaxBatches: maxBatches,
	}.Once(ctx, s.pool)
}
