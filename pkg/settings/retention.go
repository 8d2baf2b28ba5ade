package settings

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Key places a row in its table's retention order, oldest first: by ID, or,
// in a table ordered by a time (finished todos by finished_at), by At and
// then ID. A table ordered by ID alone leaves At zero and ignores it.
type Key struct {
	At time.Time
	ID int64
}

// MaxKey is after every row: Table.Count up to it counts all of a tenant's
// rows.
var MaxKey = Key{At: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), ID: math.MaxInt64}

// after reports whether k comes after o in retention order.
func (k Key) after(o Key) bool {
	if !k.At.Equal(o.At) {
		return k.At.After(o.At)
	}
	return k.ID > o.ID
}

// TenantRows is a number of one tenant's rows.
type TenantRows struct {
	Tenant uuid.UUID
	Rows   int64
}

// Written is what one tenant wrote lately (Table.Written).
type Written struct {
	Tenant uuid.UUID
	// Before counts its rows in (after, mid], After those beyond mid.
	Before, After int64
	// Newest is the key of the newest of them.
	Newest Key
}

// Table is what retention needs from a table's owner: the statements, each
// short and SKIP LOCKED where it deletes, over its rows in retention order.
// Rows are a tenant's (human_id) and counted in that order; a table may keep
// some rows past the caps (events whose todo is live): it counts them but
// never deletes them.
type Table interface {
	// PruneByAge deletes up to batch rows older than maxAge, oldest first,
	// and says how many went per tenant.
	PruneByAge(ctx context.Context, maxAge time.Duration, batch int32) ([]TenantRows, error)
	// Newest is the key of the table's newest row (the zero Key when empty).
	Newest(ctx context.Context) (Key, error)
	// Written counts, per tenant, its rows after after: those up to mid
	// and those after it apart (mid is never before after). It reads only
	// those rows.
	Written(ctx context.Context, after, mid Key) ([]Written, error)
	// Tenants lists every tenant that has rows (one index probe each).
	Tenants(ctx context.Context) ([]uuid.UUID, error)
	// Walk reads the tenant's newest keep+1 rows at most (newest first,
	// along an index): how many it found and, when keep+1, the oldest of
	// them, the newest row beyond keep.
	Walk(ctx context.Context, tenant uuid.UUID, keep int64) (int64, Key, error)
	// Trim deletes up to batch of the tenant's rows at or before cut,
	// oldest first, skipping locked rows, and says how many went.
	Trim(ctx context.Context, tenant uuid.UUID, cut Key, batch int32) (int64, error)
	// Count counts the tenant's rows at or before cut.
	Count(ctx context.Context, tenant uuid.UUID, cut Key) (int64, error)
}

// Pruned is what one pass deleted, by rule.
type Pruned struct {
	ByAge, OverTenantCap, OverTableCap int64
	// SafetyNet is set when the table-wide cap took rows.
	SafetyNet *SafetyNet
}

// Total is every row the pass deleted.
func (p Pruned) Total() int64 { return p.ByAge + p.OverTenantCap + p.OverTableCap }

// SafetyNet describes the table-wide cap at work: the tenants together held
// more than max_rows, so the largest were cut to Level rows (a few to
// Level+1, the table's exact fill).
type SafetyNet struct {
	Rows, MaxRows, Level int64
	Tenants              int
}

// Pruner applies one table's retention.* setting, pass after pass, in this
// order: rows older than max_age_seconds; each tenant's oldest beyond its
// newest max_rows_per_tenant (only its own: another tenant's writes never
// evict them); then, when the tenants together still hold more than
// max_rows, the table's safety net, which cuts the tenants holding the most
// rows first (tenantcap.go, safetynet.go say how each stays cheap). Every
// rule deletes in batches, each its own short statement that skips rows
// another node holds, so every node can prune at once, and runs at most
// maxBatches of them per pass, so a backlog is worked off over several
// passes instead of one long burst.
//
// A Pruner remembers between passes, per tenant, how many rows it can hold
// at most, so that finding the tenants over their cap reads only the rows
// written since the last pass (its state is a cache: losing it costs one
// look at every tenant). Build one per table and node; passes run one at a
// time.
type Pruner struct {
	key   string
	def   Retention
	table Table

	mu sync.Mutex
	tenantCaps
}

// NewPruner returns the pruner of table under the setting key, whose value
// is def when the row is missing.
func NewPruner(key string, def Retention, table Table) *Pruner {
	return &Pruner{key: key, def: def, table: table}
}

// Once reads the setting and applies it now (at most batch rows per
// statement, maxBatches statements per rule).
func (p *Pruner) Once(ctx context.Context, db DB, batch int32, maxBatches int) (Pruned, error) {
	r, err := Read(ctx, db, p.key, p.def)
	if err != nil {
		return Pruned{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out Pruned
	if out.ByAge, err = p.pruneByAge(ctx, r, batch, maxBatches); err != nil {
		return out, p.fail("prune by age", err)
	}
	if err := p.catchUp(ctx, p.table); err != nil {
		return out, p.fail("count new rows", err)
	}
	if out.OverTenantCap, err = p.capTenants(ctx, r.MaxRowsPerTenant, batch, maxBatches); err != nil {
		return out, p.fail("prune over the tenant cap", err)
	}
	if out.OverTableCap, out.SafetyNet, err = p.capTable(ctx, r.MaxRows, batch, maxBatches); err != nil {
		return out, p.fail("prune over the table cap", err)
	}
	return out, nil
}

func (p *Pruner) fail(step string, err error) error {
	return fmt.Errorf("%s: %s: %w", p.key, step, err)
}

// pruneByAge deletes rows older than the age bound, and lowers the bounds of
// the tenants they were of.
func (p *Pruner) pruneByAge(ctx context.Context, r Retention, batch int32, maxBatches int) (int64, error) {
	var total int64
	for range maxBatches {
		gone, err := p.table.PruneByAge(ctx, r.MaxAge(), batch)
		var n int64
		for _, g := range gone {
			n += g.Rows
			p.deleted(g.Tenant, g.Rows)
		}
		total += n
		if err != nil || n < int64(batch) {
			return total, err
		}
	}
	return total, nil
}

// trim deletes the tenant's rows at or before cut, batch by batch, while
// budget lasts; done is whether it reached the end of them.
func (p *Pruner) trim(ctx context.Context, tenant uuid.UUID, cut Key, batch int32, budget *int) (deleted int64, done bool, err error) {
	for *budget > 0 {
		*budget--
		n, err := p.table.Trim(ctx, tenant, cut, batch)
		deleted += n
		if err != nil || n < int64(batch) {
			return deleted, err == nil, err
		}
	}
	return deleted, false, nil
}
