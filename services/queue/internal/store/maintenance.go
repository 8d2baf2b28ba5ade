package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"

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

// Reap ends up to batch expired leases in one statement. A todo goes back to
// PENDING, or to DEAD at its attempt cap or at maxExpiries consecutive
// expiries. Safe on every node at once (SKIP LOCKED).
func (s *Store) Reap(ctx context.Context, batch, maxExpiries int32) ([]Reaped, error) {
	rows, err := s.q.TodoReapExpired(ctx, s.pool, dbsqlc.TodoReapExpiredParams{MaxExpiries: maxExpiries, BatchSize: batch})
	if err != nil {
		return nil, fmt.Errorf("reap expired leases: %w", err)
	}
	out := make([]Reaped, len(rows))
	for i, r := range rows {
		out[i] = Reaped(r)
	}
	return out, nil
}

// PruneOnce applies retention.todos now (settings.Prune) to finished todos:
// live ones are never candidates.
func (s *Store) PruneOnce(ctx context.Context, batch int32, maxBatches int) (int64, error) {
	return settings.Prune{
		Key: settings.RetentionTodos, Default: settings.DefaultRetentionTodos,
		ByAge: s.pruneByAge, OverCap: s.pruneOverCap, Batch: batch, MaxBatches: maxBatches,
	}.Once(ctx, s.pool)
}

// pruneByAge deletes up to batch finished todos older than r's age bound.
func (s *Store) pruneByAge(ctx context.Context, r settings.Retention, batch int32) (int64, error) {
	n, err := s.q.TodoPruneByAge(ctx, s.pool, dbsqlc.TodoPruneByAgeParams{MaxAgeSeconds: r.MaxAge().Seconds(), BatchSize: batch})
	if err != nil {
		return 0, fmt.Errorf("prune todos by age: %w", err)
	}
	return n, nil
}

// pruneOverCap deletes up to batch of the oldest finished todos beyond the
// newest r.MaxRows.
func (s *Store) pruneOverCap(ctx context.Context, r settings.Retention, batch int32) (int64, error) {
	n, err := s.q.TodoPruneOverCap(ctx, s.pool, dbsqlc.TodoPruneOverCapParams{MaxRows: r.MaxRows, BatchSize: batch})
	if err != nil {
		return 0, fmt.Errorf("prune todos over the row cap: %w", err)
	}
	return n, nil
}

// Notify sends one pg_notify per payload on the queue channel, in one
// statement (and so one implicit transaction of its own).
func (s *Store) Notify(ctx context.Context, payloads []string) error {
	if err := s.q.QueueNotify(ctx, s.pool, payloads); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}

// NotifyChannel is the channel queue wake-ups travel on; the payload is
// "<human_id>:<queue>".
const NotifyChannel = "switchboard_queue"

// Listen holds one pool connection LISTENing on NotifyChannel and calls
// onReady once subscribed, then onPayload for each notification, until ctx
// ends or the connection fails. The connection is closed afterwards rather
// than returned to the pool, so no pooled session is left subscribed.
func (s *Store) Listen(ctx context.Context, onReady func(), onPayload func(string)) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire listen connection: %w", err)
	}
	raw := conn.Hijack()
	defer raw.Close(context.WithoutCancel(ctx)) //nolint:errcheck // the session ends either way
	if err := s.q.QueueListen(ctx, raw); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	onReady()
	for {
		n, err := raw.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("wait for notification: %w", err)
		}
		onPayload(n.Payload)
	}
}
