package realtime

import "context"

// maxRetentionBatches bounds one pass of each kind, so a huge backlog is
// worked off over several ticks instead of one long burst.
const maxRetentionBatches = 20

// PruneOnce applies retention.realtime_events now and returns how many
// durable events it deleted: those older than max_age_seconds, then each
// tenant's oldest beyond its newest max_rows_per_tenant (a tenant's
// publishes only ever evict its own events), then, when the tenants
// together still hold more than max_rows, the largest tenants' oldest (the
// safety net: logged as a warning, since it means max_rows is below
// tenants × max_rows_per_tenant). Bounded batches that skip rows another
// node holds, so every node can prune at once.
func (s *Server) PruneOnce(ctx context.Context) (int64, error) {
	p, err := s.store.PruneOnce(ctx, int32(s.opts.RetentionBatch), maxRetentionBatches)
	s.opts.Metrics.RetentionSeries().Pruned("realtime_events", p.ByAge, p.OverTenantCap, p.OverTableCap)
	p.Log(s.log, "durable realtime events", "retention.realtime_events")
	return p.Total(), err
}
