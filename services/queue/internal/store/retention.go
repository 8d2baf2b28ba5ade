package store

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/queue/internal/store/dbsqlc"
)

// retention is the finished todos in (finished_at, id) order, for
// settings.Pruner: a todo finished long ago is older than one finished now,
// whenever either was enqueued.
type retention struct{ s *Store }

func (r retention) PruneByAge(ctx context.Context, maxAge time.Duration, batch int32) ([]settings.TenantRows, error) {
	rows, err := r.s.q.TodoPruneByAge(ctx, r.s.pool, dbsqlc.TodoPruneByAgeParams{MaxAgeSeconds: maxAge.Seconds(), BatchSize: batch})
	out := make([]settings.TenantRows, len(rows))
	for i, g := range rows {
		out[i] = settings.TenantRows{Tenant: g.HumanID, Rows: g.Deleted}
	}
	return out, err
}

func (r retention) Newest(ctx context.Context) (settings.Key, error) {
	at, err := r.s.q.TodoFinishedNewest(ctx, r.s.pool)
	return settings.Key{At: at}, err
}

// Written counts by finished_at alone: the todos one statement finishes
// share it, and commit together.
func (r retention) Written(ctx context.Context, after, mid settings.Key) ([]settings.Written, error) {
	rows, err := r.s.q.TodoRetentionWritten(ctx, r.s.pool, dbsqlc.TodoRetentionWrittenParams{AfterAt: after.At, MidAt: mid.At})
	out := make([]settings.Written, len(rows))
	for i, w := range rows {
		out[i] = settings.Written{Tenant: w.HumanID, Before: w.BeforeMid, After: w.AfterMid, Newest: settings.Key{At: w.Newest}}
	}
	return out, err
}

func (r retention) Tenants(ctx context.Context) ([]uuid.UUID, error) {
	return r.s.q.TodoRetentionTenants(ctx, r.s.pool)
}

// Walk counts first and reads the cutoff only for a tenant over keep: two
// index-only scans then, one for the others (a single statement numbering
// the rows costs more than both).
func (r retention) Walk(ctx context.Context, tenant uuid.UUID, keep int64) (int64, settings.Key, error) {
	n, err := r.s.q.TodoRetentionCountNewest(ctx, r.s.pool, dbsqlc.TodoRetentionCountNewestParams{HumanID: tenant, Keep: keep})
	if err != nil || n <= keep {
		return n, settings.Key{}, err
	}
	c, err := r.s.q.TodoRetentionCutoff(ctx, r.s.pool, dbsqlc.TodoRetentionCutoffParams{HumanID: tenant, Keep: keep})
	if errors.Is(err, pgx.ErrNoRows) {
		return keep, settings.Key{}, nil // pruned meanwhile, down to keep or fewer
	}
	return n, settings.Key{At: c.FinishedAt, ID: c.ID}, err
}

func (r retention) Trim(ctx context.Context, tenant uuid.UUID, cut settings.Key, batch int32) (int64, error) {
	return r.s.q.TodoRetentionTrim(ctx, r.s.pool, dbsqlc.TodoRetentionTrimParams{HumanID: tenant, CutAt: cut.At, CutID: cut.ID, BatchSize: batch})
}

func (r retention) Count(ctx context.Context, tenant uuid.UUID, cut settings.Key) (int64, error) {
	return r.s.q.TodoRetentionCount(ctx, r.s.pool, dbsqlc.TodoRetentionCountParams{HumanID: tenant, CutAt: cut.At, CutID: cut.ID, MaxRows: math.MaxInt64})
}
