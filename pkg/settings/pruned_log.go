package settings

import "go.uber.org/zap"

// Log reports a pass the same way for every table, so that operators can
// alert on one message shape: an info line with the counts when anything
// went, and a warning when the safety net cut tenants, since that means the
// setting key's max_rows is below tenants × max_rows_per_tenant. noun names
// the rows in plural ("events"); key is the retention.* setting applied.
func (p Pruned) Log(log *zap.Logger, noun, key string) {
	if p.Total() > 0 {
		log.Info("pruned "+noun, zap.Int64("count", p.Total()),
			zap.Int64("by_age", p.ByAge), zap.Int64("over_tenant_cap", p.OverTenantCap), zap.Int64("over_table_cap", p.OverTableCap))
	}
	if n := p.SafetyNet; n != nil {
		log.Warn("retention safety net: the tenants together hold more "+noun+" than "+key+".max_rows; the largest tenants were cut (raise max_rows above tenants × max_rows_per_tenant)",
			zap.Int64("rows", n.Rows), zap.Int64("max_rows", n.MaxRows), zap.Int64("cut_to", n.Level), zap.Int("tenants_cut", n.Tenants), zap.Int64("deleted", p.OverTableCap))
	}
}
