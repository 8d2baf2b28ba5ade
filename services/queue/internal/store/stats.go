package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/services/queue/internal/store/dbsqlc"
)

// Stats is a queue's depth by state.
type Stats struct {
	PendingReady, PendingScheduled, Running, Completed, Dead, Cancelled int64
	OldestPendingAgeSeconds                                             float64
}

// Stats counts a queue's todos by state (exact, at the time of the call).
func (s *Store) Stats(ctx context.Context, c Caller, queue string) (Stats, error) {
	r, err := s.q.TodoStatsByState(ctx, s.pool, dbsqlc.TodoStatsByStateParams{HumanID: c.HumanID, Queue: queue})
	if err != nil {
		return Stats{}, mapErr(err, "queue stats", "queue "+queue)
	}
	return Stats{
		PendingReady: r.PendingReady, PendingScheduled: r.PendingScheduled, Running: r.Running,
		Completed: r.Completed, Dead: r.Dead, Cancelled: r.Cancelled, OldestPendingAgeSeconds: r.OldestPendingAgeSeconds,
	}, nil
}

// Vacuum is the todos table's vacuum health: figures of the whole table,
// every tenant's rows together.
type Vacuum struct {
	LiveTuples, DeadTuples      int64
	OldestTransactionAgeSeconds float64
	LastVacuum, LastAutovacuum  *time.Time
}

// VacuumHealth reads the todos table's vacuum statistics.
func (s *Store) VacuumHealth(ctx context.Context) (Vacuum, error) {
	v, err := s.q.TodoVacuumHealth(ctx, s.pool)
	if err != nil {
		return Vacuum{}, mapErr(err, "vacuum health", "todos statistics")
	}
	return Vacuum{
		LiveTuples: v.NLiveTup, DeadTuples: v.NDeadTup, OldestTransactionAgeSeconds: v.OldestXactAgeSeconds,
		LastVacuum: v.LastVacuum, LastAutovacuum: v.LastAutovacuum,
	}, nil
}

// Depth is one (tenant, queue, state) group of live todos.
type Depth struct {
	HumanID              uuid.UUID
	Queue, State         string
	Todos                int64
	OldestPendingSeconds float64
}

// Depths counts live todos (pending, running, dead) of every tenant by queue
// and state, at most limit groups, the biggest first: the metrics' gauges.
func (s *Store) Depths(ctx context.Context, limit int32) ([]Depth, error) {
	rows, err := s.q.TodoDepths(ctx, s.pool, limit)
	if err != nil {
		return nil, fmt.Errorf("queue depths: %w", err)
	}
	out := make([]Depth, len(rows))
	for i, r := range rows {
		out[i] = Depth{HumanID: r.HumanID, Queue: r.Queue, State: r.State, Todos: r.Todos, OldestPendingSeconds: r.OldestPendingSeconds}
	}
	return out, nil
}
