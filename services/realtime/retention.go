package realtime

import (
	"context"

	"go.uber.org/zap"
)

// maxRetentionBatches bounds one pass of each kind, so a huge backlog is
// worked off over several ticks instead of one long burst.
const maxRetentionBatches = 20

// PruneOnce applies retention.realtime_events now: durable events older than
// max_age_seconds, then the oldest beyond the newest max_rows (both bounds
// together), in bounded batches that skip rows another node holds, so every
// node can prune at once. It returns how many it deleted.
func (s *Server) PruneOnce(ctx context.Context) (int64, error) {
	total, err := s.store.PruneOnce(ctx, int32(s.opts.RetentionBatch), maxRetentionBatches)
	if total > 0 {
		s.log.Info("pruned durable realtime events", zap.Int64("count", total))
	}
	return total, err
}
