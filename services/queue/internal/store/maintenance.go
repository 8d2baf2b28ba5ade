package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

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

// Retention is the setting retention.todos.
type Retention struct {
	MaxAge  time.Duration
	MaxRows int64
}

// RetentionSettings reads retention.todos (seeded defaults when missing).
func (s *Store) RetentionSettings(ctx context.Context) (Retention, error) {
	r, err := s.q.TodoRetentionSettings(ctx, s.pool)
	if err != nil {
		return Retention{}, fmt.Errorf("read retention.todos: %w", err)
	}
	return Retention{MaxAge: time.Duration(r.MaxAgeSeconds) * time.Second, MaxRows: r.MaxRows}, nil
}

// PruneByAge deletes up to batch finished todos older than maxAge.
func (s *Store) PruneByAge(ctx context.Context, maxAge time.Duration, batch int32) (int64, error) {
	n, err := s.q.TodoPruneByAge(ctx, s.pool, dbsqlc.TodoPruneByAgeParams{MaxAgeSeconds: maxAge.Seconds(), BatchSize: batch})
	if err != nil {
		return 0, fmt.Errorf("prune todos by age: %w", err)
	}
	return n, nil
}

// PruneOverCap deletes up to batch of the oldest finished todos beyond the
// newest maxRows.
func (s *Store) PruneOverCap(ctx context.Context, maxRows int64, batch int32) (int64, error) {
	n, err := s.q.TodoPruneOverCap(ctx, s.pool, dbsqlc.TodoPruneOverCapParams{MaxRows: maxRows, BatchSize: batch})
	if err != nil {
		return 0, fmt.Errorf("prune todos over the row cap: %w", err)
	}
	return n, nil
}
