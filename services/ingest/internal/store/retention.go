package store

import (
	"context"
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/ingest/internal/store/dbsqlc"
)

// PruneOnce applies retention.events now (settings.Pruner): events older
// than max_age_seconds, each tenant's oldest beyond its newest
// max_rows_per_tenant, then the table's max_rows from the largest tenants;
// never an event whose todo is still live (its worker reads the event),
// though it counts toward its tenant's rows.
func (s *Store) PruneOnce(ctx context.Context, batch int32, maxBatches int) (settings.Pruned, error) {
	return s.pruner.Once(ctx, s.pool, batch, maxBatches)
}

// retention is events in id order (arrival order), for settings.Pruner.
type retention struct{ s *Store }

func (r retention) PruneByAge(ctx context.Context, maxAge time.Duration, batch int32) ([]settings.TenantRows, error) {
	rows, err := r.s.q.EventPruneByAge(ctx, r.s.pool, dbsqlc.EventPruneByAgeParams{MaxAgeSeconds: maxAge.Seconds(), BatchSize: batch})
	out := make([]settings.TenantRows, len(rows))
	for i, g := range rows {
		out[i] = settings.TenantRows{Tenant: g.HumanID, Rows: g.Deleted}
	}
	return out, err
}

func (r retention) Newest(ctx context.Context) (settings.Key, error) {
	id, err := r.s.q.EventMaxID(ctx, r.s.pool)
	return settings.Key{ID: id}, err
}

func (r retention) Written(ctx context.Context, after, mid settings.Key) ([]settings.Written, error) {
	rows, err := r.s.q.EventRetentionWritten(ctx, r.s.pool, dbsqlc.EventRetentionWrittenParams{AfterID: after.ID, MidID: mid.ID})
	out := make([]settings.Written, len(rows))
	for i, w := range rows {
		out[i] = settings.Written{Tenant: w.HumanID, Before: w.BeforeMid, After: w.AfterMid, Newest: settings.Key{ID: w.Newest}}
	}
	return out, err
}

func (r retention) Tenants(ctx context.Context) ([]uuid.UUID, error) {
	return r.s.q.EventRetentionTenants(ctx, r.s.pool)
}

func (r retention) Walk(ctx context.Context, tenant uuid.UUID, keep int64) (int64, settings.Key, error) {
	w, err := r.s.q.EventRetentionWalk(ctx, r.s.pool, dbsqlc.EventRetentionWalkParams{HumanID: tenant, Keep: keep})
	return w.Found, settings.Key{ID: w.Oldest}, err
}

func (r retention) Trim(ctx context.Context, tenant uuid.UUID, cut settings.Key, batch int32) (int64, error) {
	return r.s.q.EventRetentionTrim(ctx, r.s.pool, dbsqlc.EventRetentionTrimParams{HumanID: tenant, CutID: cut.ID, BatchSize: batch})
}

func (r retention) Count(ctx context.Context, tenant uuid.UUID, cut settings.Key) (int64, error) {
	return r.s.q.EventRetentionCount(ctx, r.s.pool, dbsqlc.EventRetentionCountParams{HumanID: tenant, CutID: cut.ID, MaxRows: math.MaxInt64})
}
