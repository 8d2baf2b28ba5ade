package queue

import "context"

// PruneOnce applies the setting retention.todos now and returns how many
// finished (completed, dead, cancelled) todos it deleted: those finished
// longer than max_age_seconds ago, then each tenant's oldest beyond its
// newest max_rows_per_tenant (a tenant's todos only ever go for its own),
// then, when the tenants together still hold more than max_rows, the largest
// tenants' oldest (the safety net: logged as a warning, since it means
// max_rows is below tenants × max_rows_per_tenant). Live todos are never
// candidates. Deletes run in bounded batches (Options.RetentionBatch, at most
// MaxBatchesPerTick of each kind per pass), each its own short transaction,
// and skip rows another node holds, so every node can prune at once.
func (s *Server) PruneOnce(ctx context.Context) (int64, error) {
	p, err := s.store.PruneOnce(ctx, s.opts.RetentionBatch, s.opts.MaxBatchesPerTick)
	s.opts.Metrics.RetentionSeries().Pruned("todos", p.ByAge, p.OverTenantCap, p.OverTableCap)
	p.Log(s.log, "finished todos", "retention.todos")
	return p.Total(), err
}
