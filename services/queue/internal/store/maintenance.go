package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/pkg/postgres"
	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/queue/internal/store/dbsqlc"
)

// Reaped is a todo whose expired lease the reaper ended.
type Reaped struct {
	ID      int64
	HumanID uuid.UUID
	Queue   string
	AgentID *uuid.UUID
	// State is "pending" (redelivered) or "dead" (attempt or expiry cap).
	State string
}

// Reap ends up to batch expired leases in one transaction: it locks them
// (TodoLockExpired) and ends them through the statement that ends every run
// (TodoSettle, action expire), so their limited queues' counters go down as
// a completion's do. A todo goes back to PENDING, or to DEAD at its attempt
// cap or at maxExpiries consecutive expiries. Safe on every node at once
// (SKIP LOCKED).
func (s *Store) Reap(ctx context.Context, batch, maxExpiries int32) ([]Reaped, error) {
	var rows []Settled
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		expired, err := s.q.TodoLockExpired(ctx, tx, batch)
		if err != nil || len(expired) == 0 {
			return err
		}
		rows, err = s.settle(ctx, tx, settleArgs{maxExpiries: maxExpiries}, postgres.Convert(expired,
			func(r dbsqlc.TodoLockExpiredRow) settleItem {
				return settleItem{Lease: Lease{ID: r.ID, Token: r.LeaseToken}, action: actExpire}
			}))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reap expired leases: %w", err)
	}
	out := make([]Reaped, len(rows))
	for i, r := range rows {
		out[i] = Reaped{ID: r.ID, HumanID: r.HumanID, Queue: r.Queue, AgentID: r.AgentID, State: r.State}
	}
	return out, nil
}

// PruneOnce applies retention.todos now (settings.Pruner) to finished todos
// (live ones are never candidates), then deletes expired WINDOW dedupe
// reservations; what it reports is the todos'.
func (s *Store) PruneOnce(ctx context.Context, batch int32, maxBatches int) (settings.Pruned, error) {
	p, err := s.pruner.Once(ctx, s.pool, batch, maxBatches)
	if err != nil {
		return p, err
	}
	return p, s.pruneWindows(ctx, batch, maxBatches)
}
