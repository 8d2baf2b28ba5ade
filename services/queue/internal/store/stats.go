package store

import (
	"context"
	"time"

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
