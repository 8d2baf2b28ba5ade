package store

import (
	"context"
	"time"

	"github.com/switchboard/switchboard/services/queue/internal/store/dbsqlc"
)

// Control is a queue's flow-control state (queue_controls). The zero value
// is a queue that was never controlled: running.
type Control struct {
	Paused    bool
	PausedAt  *time.Time
	UpdatedAt *time.Time
}

// Pause pauses the caller's queue. changed is false when it was already
// paused (nothing was written; the state is the first pause's).
func (s *Store) Pause(ctx context.Context, c Caller, queue string) (ctl Control, changed bool, err error) {
	rows, err := s.q.QueuePause(ctx, s.pool, dbsqlc.QueuePauseParams{HumanID: c.HumanID, Queue: queue})
	if err != nil {
		return Control{}, false, mapErr(err, "pause queue", "queue "+queue)
	}
	if len(rows) == 1 {
		r := rows[0]
		return Control{Paused: r.Paused, PausedAt: r.PausedAt, UpdatedAt: &r.UpdatedAt}, true, nil
	}
	ctl, err = s.Control(ctx, c, queue)
	return ctl, false, err
}

// Resume resumes the caller's queue. changed is false when it was not
// paused (nothing was written).
func (s *Store) Resume(ctx context.Context, c Caller, queue string) (ctl Control, changed bool, err error) {
	rows, err := s.q.QueueResume(ctx, s.pool, dbsqlc.QueueResumeParams{HumanID: c.HumanID, Queue: queue})
	if err != nil {
		return Control{}, false, mapErr(err, "resume queue", "queue "+queue)
	}
	if len(rows) == 1 {
		r := rows[0]
		return Control{Paused: r.Paused, PausedAt: r.PausedAt, UpdatedAt: &r.UpdatedAt}, true, nil
	}
	ctl, err = s.Control(ctx, c, queue)
	return ctl, false, err
}

// Control reads the caller's queue's control state. It is a statement of
// its own (not the pause's or resume's fallback inside theirs) so that it
// sees a concurrent caller's committed change, not the snapshot the write
// started from.
func (s *Store) Control(ctx context.Context, c Caller, queue string) (Control, error) {
	rows, err := s.q.QueueControlGet(ctx, s.pool, dbsqlc.QueueControlGetParams{HumanID: c.HumanID, Queue: queue})
	if err != nil {
		return Control{}, mapErr(err, "queue control", "queue "+queue)
	}
	if len(rows) == 0 {
		return Control{}, nil
	}
	r := rows[0]
	return Control{Paused: r.Paused, PausedAt: r.PausedAt, UpdatedAt: &r.UpdatedAt}, nil
}

// QueueSummary is one queue of ListQueues: its depth by state and pause flag.
type QueueSummary struct {
	Queue  string
	Paused bool
	Stats
}

// ListQueues returns up to limit of the caller's queues named after after
// (by name): those with a todo in any state and those with a control row.
func (s *Store) ListQueues(ctx context.Context, c Caller, after string, limit int32) ([]QueueSummary, error) {
	rows, err := s.q.QueueList(ctx, s.pool, dbsqlc.QueueListParams{HumanID: c.HumanID, After: after, PageSize: limit})
	if err != nil {
		return nil, mapErr(err, "list queues", "queues")
	}
	out := make([]QueueSummary, len(rows))
	for i, r := range rows {
		out[i] = QueueSummary{Queue: r.Queue, Paused: r.Paused, Stats: Stats{
			PendingReady: r.PendingReady, PendingScheduled: r.PendingScheduled, Running: r.Running,
			Completed: r.Completed, Dead: r.Dead, Cancelled: r.Cancelled, OldestPendingAgeSeconds: r.OldestPendingAgeSeconds,
		}}
	}
	return out, nil
}
