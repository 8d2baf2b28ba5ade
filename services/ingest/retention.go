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
// lifecycle group: the webhook edge's group commit, event and payload
// retention and (with Options.NodeID) the pull adapters. Without them
// webhooks are stored one statement each.
func (s *Server) Components() []lifecycle.Component {
	cs := []lifecycle.Component{s.batcher, s.deliveries, lifecycle.NewLoop(Name+"-retention", retentionInterval, lifecycle.Warned(s.log, "event retention failed", s.PruneOnce))}
	if s.adapters != nil {
		cs = append(cs, s.adapters)
	}
	return cs
}

// PruneOnce applies the setting retention.events now and returns how many
// events it deleted: those received longer than max_age_seconds ago, then
// each tenant's oldest beyond its newest max_rows_per_tenant (a tenant's
// events only ever go for its own), then, when the tenants together still
// hold more than max_rows, the largest tenants' oldest (the safety net:
// logged as a warning, since it means max_rows is below tenants ×
// max_rows_per_tenant). Then it applies retention.event_payloads
// (PrunePayloadsOnce), whose count it logs but does not return. An event
// whose todo is still live is never deleted nor emptied. Safe on every node
// at once (SKIP LOCKED).
func (s *Server) PruneOnce(ctx context.Context) (int64, error) {
	p, err := s.store.PruneOnce(ctx, retentionBatch, retentionBatches)
	s.opts.Metrics.RetentionSeries().Pruned("events", p.ByAge, p.OverTenantCap, p.OverTableCap)
	p.Log(s.log, "events", "retention.events")
	if err != nil {
		return p.Total(), err
	}
	_, err = s.PrunePayloadsOnce(ctx)
	return p.Total(), err
}

// PrunePayloadsOnce applies the setting retention.event_payloads now and
// returns how many payloads it emptied: those of events received longer
// than max_age_seconds ago (0: none), keeping each event's row, metadata
// and size_bytes; such an event can no longer be replayed. Same pacing as
// PruneOnce.
func (s *Server) PrunePayloadsOnce(ctx context.Context) (int64, error) {
	n, err := s.store.PrunePayloadsOnce(ctx, retentionBatch, retentionBatches)
	if n > 0 {
		s.log.Info("pruned event payloads", zap.Int64("count", n))
	}
	return n, err
}
