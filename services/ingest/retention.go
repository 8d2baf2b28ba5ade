package ingest

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/lifecycle"
)

// Retention pacing: one pass per interval, each delete a short transaction
// of at most retentionBatch events, at most retentionBatches of them per
// rule and pass, so one node never holds a long run of statements.
const (
	retentionInterval = time.Minute
	retentionBatch    = 1000
	retentionBatches  = 100
)

// Components are the service's background parts, to run in the node's
// lifecycle group: the webhook edge's group commit, event retention and
// (with Options.NodeID) the pull adapters. Without them webhooks are stored
// one statement each.
func (s *Server) Components() []lifecycle.Component {
	cs := []lifecycle.Component{s.batcher, lifecycle.NewLoop(Name+"-retention", retentionInterval, lifecycle.Warned(s.log, "event retention failed", s.PruneOnce))}
	if s.adapters != nil {
		cs = append(cs, s.adapters)
	}
	return cs
}

// PruneOnce applies the setting retention.events now and returns how many
// events it deleted: those received longer than max_age_seconds ago, then
// the oldest beyond the newest max_rows (both bounds together: either alone
// leaves the other dimension unbounded). An event whose todo is still live
// is never deleted. Safe on every node at once (SKIP LOCKED).
func (s *Server) PruneOnce(ctx context.Context) (int64, error) {
	total, err := s.store.PruneOnce(ctx, retentionBatch, retentionBatches)
	if total > 0 {
		s.log.Info("pruned events", zap.Int64("count", total))
	}
	return total, err
}
