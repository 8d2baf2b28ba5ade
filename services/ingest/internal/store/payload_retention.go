package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/ingest/internal/store/dbsqlc"
)

// PrunePayloadsOnce applies retention.event_payloads now: it empties the
// payload of events received longer than max_age_seconds ago and sets their
// payload_pruned_at, keeping the row and its size_bytes (the history), except
// for events whose todo is still live (its worker reads the payload). 0
// (the default) prunes nothing. Each batch is its own short transaction of at
// most batch rows, at most maxBatches of them per pass, and skips rows
// another node or a replay holds, so every node can run it at once. It
// returns how many payloads went.
func (s *Store) PrunePayloadsOnce(ctx context.Context, batch int32, maxBatches int) (int64, error) {
	r, err := settings.Read(ctx, s.pool, settings.RetentionEventPayloads, settings.DefaultRetentionEventPayloads)
	if err != nil || r.MaxAgeSeconds <= 0 {
		return 0, err
	}
	var total int64
	for range maxBatches {
		locked, pruned, err := s.prunePayloadBatch(ctx, r, batch)
		total += pruned
		if err != nil {
			return total, fmt.Errorf("%s: prune payloads: %w", settings.RetentionEventPayloads, err)
		}
		if locked < int(batch) {
			break
		}
	}
	return total, nil
}

// prunePayloadBatch locks up to batch events due (in id order, skipping
// locked ones) and empties their payloads in one transaction; it returns how
// many it locked and how many it pruned (fewer when a replay gave one a live
// todo in between).
func (s *Store) prunePayloadBatch(ctx context.Context, r settings.PayloadRetention, batch int32) (locked int, pruned int64, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		ids, err := s.q.EventPayloadsLockForPrune(ctx, tx, dbsqlc.EventPayloadsLockForPruneParams{
			MaxAgeSeconds: r.MaxAge().Seconds(), BatchSize: batch,
		})
		if err != nil || len(ids) == 0 {
			return err
		}
		locked = len(ids)
		pruned, err = s.q.EventPayloadsPrune(ctx, tx, ids)
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	return locked, pruned, nil
}
