package settings

import (
	"cmp"
	"context"
	"slices"

	"github.com/google/uuid"
)

// The table-wide cap, max_rows, is a safety net for when the operator
// provisioned less than tenants × max_rows_per_tenant: it is the one rule
// under which a tenant's rows can go because of another's writes, so it
// takes from the tenants holding the most rows first. It cuts them to one
// level, the largest under which the table fits (a few keep one row more, so
// that the table holds exactly max_rows), and leaves every smaller tenant
// whole: a tenant flooding the table loses its own rows first.
//
// Its check costs nothing while the bounds of the per-tenant caps
// (tenantcap.go) add up to max_rows or less, the normal case (they sum to at
// most tenants × (max_rows_per_tenant + 1%)). Beyond a hundredth over, it
// counts every tenant exactly (reading the table's index once) and cuts when
// the table really is over.

// capTable applies max_rows; it says what it deleted and, when it did, how.
func (p *Pruner) capTable(ctx context.Context, maxRows int64, batch int32, maxBatches int) (int64, *SafetyNet, error) {
	var bound int64
	for _, b := range p.tenants {
		if !b.known {
			return 0, nil, nil // a tenant still to look at: a later pass knows the table
		}
		bound += b.rows
	}
	if bound <= maxRows+maxRows/100 {
		return 0, nil, nil
	}
	counts, total, err := p.countAll(ctx)
	if err != nil || total <= maxRows {
		return 0, nil, err
	}
	keep, level := fill(counts, maxRows)
	net := &SafetyNet{Rows: total, MaxRows: maxRows, Level: level, Tenants: len(keep)}
	budget := maxBatches
	var deleted int64
	for _, c := range counts[:len(keep)] {
		if budget == 0 {
			break
		}
		n, cut, err := p.table.Walk(ctx, c.Tenant, keep[c.Tenant])
		if err != nil {
			return deleted, net, err
		}
		if n <= keep[c.Tenant] {
			p.holds(c.Tenant, n, 0)
			continue
		}
		d, err := p.cut(ctx, c.Tenant, keep[c.Tenant], cut, batch, &budget)
		deleted += d
		if err != nil {
			return deleted, net, err
		}
	}
	return deleted, net, nil
}

// countAll counts every known tenant's rows exactly, largest first, and
// makes them its bounds.
func (p *Pruner) countAll(ctx context.Context) ([]TenantRows, int64, error) {
	counts := make([]TenantRows, 0, len(p.tenants))
	var total int64
	for t := range p.tenants {
		n, err := p.table.Count(ctx, t, MaxKey)
		if err != nil {
			return nil, 0, err
		}
		p.holds(t, n, p.tenants[t].kept)
		counts = append(counts, TenantRows{Tenant: t, Rows: n})
		total += n
	}
	slices.SortFunc(counts, func(x, y TenantRows) int {
		return cmp.Or(cmp.Compare(y.Rows, x.Rows), slices.Compare(x.Tenant[:], y.Tenant[:]))
	})
	return counts, total, nil
}

// fill finds the level that fits counts (largest first, together over
// maxRows) into maxRows: the largest tenants keep level rows each and every
// other tenant all of its own, and the room left over goes one row each to
// those of the cut tenants holding the fewest. It returns what each cut
// tenant keeps (the first len(keep) of counts).
func fill(counts []TenantRows, maxRows int64) (keep map[uuid.UUID]int64, level int64) {
	var rest int64
	for _, c := range counts {
		rest += c.Rows
	}
	for i := range counts {
		// Cut the i+1 largest to one level; the others keep theirs.
		rest -= counts[i].Rows
		room := maxRows - rest
		if room < 0 {
			continue
		}
		cut := int64(i + 1)
		level = room / cut
		if i+1 < len(counts) && level < counts[i+1].Rows {
			continue // the next tenant is above that level: cut it too
		}
		keep = make(map[uuid.UUID]int64, i+1)
		extra := room - level*cut
		for j := i; j >= 0; j-- {
			keep[counts[j].Tenant] = level
			if extra > 0 {
				keep[counts[j].Tenant]++
				extra--
			}
		}
		return keep, level
	}
	return nil, 0 // only for a negative maxRows: the shape's floor is 1
}
