package queue

import (
	"context"

	"go.uber.org/zap"
)

// PruneOnce applies the setting retention.todos now and returns how many
// finished (completed, dead, cancelled) todos it deleted: those finished
// longer than max_age_seconds ago, then the oldest beyond the newest
// max_rows. Both bounds apply together (either alone leaves the other
// dimension unbounded). Live todos are never candidates. Deletes run in
// bounded batches (Options.RetentionBatch, at most MaxBatchesPerTick of each
// kind per pass), each its own short transaction, and skip rows another node
// holds, so every node can prune at once.
func (s *Server) PruneOnce(ctx context.Context) (int64, error) {
	total, err := s.store.PruneOnce(ctx, s.opts.RetentionBatch, s.opts.MaxBatchesPerTick)
	if total > 0 {
		s.log.Info("pruned finished todos", zap.Int64("count", total))
	}
	return total, err
}
