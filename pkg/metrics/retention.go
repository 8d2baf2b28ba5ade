package metrics

import "github.com/prometheus/client_golang/prometheus"

// Retention is the retention passes' series (every node prunes each table;
// sum over nodes).
type Retention struct {
	deleted *prometheus.CounterVec
}

// The rule label values: the age bound, a tenant's row cap, the table's
// safety net.
const (
	RuleAge       = "age"
	RuleTenantCap = "tenant_cap"
	RuleTableCap  = "table_cap"
)

// retentionTables are the tables retention prunes (the table label values).
var retentionTables = []string{"events", "todos", "realtime_events"}

func newRetention(reg prometheus.Registerer) *Retention {
	r := &Retention{deleted: counterVec(reg, "retention", "rows_deleted_total",
		"Rows retention deleted, by table and rule: age (max_age_seconds), tenant_cap (a tenant's oldest beyond "+
			"max_rows_per_tenant) and table_cap (the safety net max_rows, cutting the largest tenants: any "+
			"increase means the tenants together outgrew what the operator provisioned).",
		"table", "rule")}
	// Every series from zero, so that increase() sees the first deletion
	// (an alert watches table_cap).
	for _, table := range retentionTables {
		for _, rule := range []string{RuleAge, RuleTenantCap, RuleTableCap} {
			r.deleted.WithLabelValues(table, rule)
		}
	}
	return r
}

// Pruned counts one pass over table.
func (r *Retention) Pruned(table string, age, tenantCap, tableCap int64) {
	if r == nil {
		return
	}
	for rule, n := range map[string]int64{RuleAge: age, RuleTenantCap: tenantCap, RuleTableCap: tableCap} {
		if n > 0 {
			r.deleted.WithLabelValues(table, rule).Add(float64(n))
		}
	}
}
