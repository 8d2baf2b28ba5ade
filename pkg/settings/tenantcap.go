package settings

import (
	"cmp"
	"context"
	"slices"

	"github.com/google/uuid"
)

// Finding a tenant's cutoff (its newest row beyond the cap) means reading
// its newest max_rows_per_tenant rows along an index: cheap per row, but a
// million rows each pass for each tenant at a cap of a million would make
// every pass cost the size of the table. So a pass looks only at the tenants
// that could be over, from what this pruner knows:
//
//   - after looking at a tenant, the number of rows it held (its newest
//     keep+1 at most: Table.Walk);
//   - since then, the rows written: each pass counts the rows newer than the
//     previous two passes saw (Table.Written), so it reads only what was
//     written meanwhile, whatever the size of the table.
//
// Their sum bounds the tenant's rows from above (deletions, by this node or
// another, only make it loose), so a tenant whose bound is within its cap is
// skipped without reading its rows. A tenant is looked at again once its
// bound passes the cap by more than a hundredth of it: the look at a
// million-row tenant is then paid for by the ten thousand rows or more it
// removes, and a tenant may hold up to 1% more than its cap between two
// looks. Every look is exact: it cuts the tenant to exactly its cap.
//
// The window overlaps one pass back: a row whose transaction committed after
// the pass that would have counted it (its id or finished_at was drawn
// before) is counted by the next one. A node's first pass looks at every
// tenant once (Table.Tenants), which is how a cap lowered while no node ran
// takes effect.
type tenantCaps struct {
	started bool
	// tenants is what this pruner knows of each tenant it has seen.
	tenants map[uuid.UUID]tenantBound
	// The window: lo and mid are the newest keys the pass before the last
	// and the last saw; seen is each tenant's rows in (lo, mid], as the last
	// pass counted them.
	lo, mid Key
	seen    map[uuid.UUID]int64
}

// tenantBound is at least as many rows as the tenant holds, once known, and
// how many of them the last cut had to leave at or before its cutoff (events
// of live todos, rows another node held): they count, but they do not make
// the tenant due again, or a tenant whose oldest events wait on a backlog
// would be read in full every pass.
type tenantBound struct {
	rows, kept int64
	known      bool
}

// catchUp learns what was written since the last pass: on the first, which
// tenants there are (each to be looked at); then, per tenant, the rows newer
// than the window.
func (c *tenantCaps) catchUp(ctx context.Context, table Table) error {
	if !c.started {
		newest, err := table.Newest(ctx)
		if err != nil {
			return err
		}
		all, err := table.Tenants(ctx)
		if err != nil {
			return err
		}
		c.tenants = make(map[uuid.UUID]tenantBound, len(all))
		for _, t := range all {
			c.tenants[t] = tenantBound{}
		}
		c.lo, c.mid, c.seen, c.started = newest, newest, nil, true
		return nil
	}
	written, err := table.Written(ctx, c.lo, c.mid)
	if err != nil {
		return err
	}
	newest, seen := c.mid, make(map[uuid.UUID]int64, len(written))
	for _, w := range written {
		// Rows before mid were counted last pass, except those committed
		// since: count only what grew.
		added := w.After + max(0, w.Before-c.seen[w.Tenant])
		seen[w.Tenant] = w.After
		if b := c.tenants[w.Tenant]; b.known {
			b.rows += added
			c.tenants[w.Tenant] = b
		} else {
			c.tenants[w.Tenant] = tenantBound{}
		}
		if w.Newest.after(newest) {
			newest = w.Newest
		}
	}
	c.lo, c.mid, c.seen = c.mid, newest, seen
	return nil
}

// deleted lowers a known tenant's bound by rows this pruner deleted (taken
// from the kept ones too, as they may have been among them).
func (c *tenantCaps) deleted(tenant uuid.UUID, rows int64) {
	if b, ok := c.tenants[tenant]; ok && b.known {
		c.tenants[tenant] = tenantBound{rows: max(0, b.rows-rows), kept: max(0, b.kept-rows), known: true}
	}
}

// holds records what a look found: the tenant's rows, exactly, kept of them
// left by a cut (none: forgets it until it writes again).
func (c *tenantCaps) holds(tenant uuid.UUID, rows, kept int64) {
	if rows == 0 {
		delete(c.tenants, tenant)
		return
	}
	c.tenants[tenant] = tenantBound{rows: rows, kept: min(kept, rows), known: true}
}

// due lists the tenants to look at: those not yet known and those whose
// bound passes limit, largest first.
func (c *tenantCaps) due(limit int64) []uuid.UUID {
	type candidate struct {
		tenant uuid.UUID
		b      tenantBound
	}
	var cs []candidate
	for t, b := range c.tenants {
		if !b.known || b.rows-b.kept > limit {
			cs = append(cs, candidate{t, b})
		}
	}
	slices.SortFunc(cs, func(x, y candidate) int {
		if x.b.known != y.b.known {
			if !x.b.known {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(y.b.rows-y.b.kept, x.b.rows-x.b.kept), slices.Compare(x.tenant[:], y.tenant[:]))
	})
	out := make([]uuid.UUID, len(cs))
	for i, c := range cs {
		out[i] = c.tenant
	}
	return out
}

// capTenants cuts every tenant over its cap to exactly its newest perTenant
// rows (events of live todos and rows another node holds stay), at most
// maxBatches deletes in all; a tenant it could not finish is looked at
// again next pass.
func (p *Pruner) capTenants(ctx context.Context, perTenant int64, batch int32, maxBatches int) (int64, error) {
	budget := maxBatches
	var total int64
	for _, t := range p.due(perTenant + perTenant/100) {
		if budget == 0 {
			break
		}
		n, cut, err := p.table.Walk(ctx, t, perTenant)
		if err != nil {
			return total, err
		}
		if n <= perTenant {
			p.holds(t, n, 0)
			continue
		}
		deleted, err := p.cut(ctx, t, perTenant, cut, batch, &budget)
		total += deleted
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// cut deletes the tenant's rows at or before cut (its newest row beyond
// keep) and records what it holds after: keep plus what stayed at or before
// cut, or unknown when the budget ran out first.
func (p *Pruner) cut(ctx context.Context, t uuid.UUID, keep int64, cut Key, batch int32, budget *int) (int64, error) {
	deleted, done, err := p.trim(ctx, t, cut, batch, budget)
	if err != nil || !done {
		p.tenants[t] = tenantBound{}
		return deleted, err
	}
	left, err := p.table.Count(ctx, t, cut)
	if err != nil {
		p.tenants[t] = tenantBound{}
		return deleted, err
	}
	p.holds(t, keep+left, left)
	return deleted, nil
}
