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
	// Limits are the concurrency limits (SetLimits); Running is the
	// counter max_running is checked against; LimitsAt is when the limits
	// were last set (nil: never).
	Limits   Limits
	Running  int32
	LimitsAt *time.Time
}

// Pause pauses the caller's queue. changed is false when it was already
// paused (nothing was written; the state is the first pause's).
func (s *Store) Pause(ctx context.Context, c Caller, queue string) (ctl Control, changed bool, err error) {
	rows, err := s.q.QueuePause(ctx, s.pool, dbsqlc.QueuePauseParams{HumanID: c.HumanID, Queue: queue})
	return s.controlAfter(ctx, c, queue, "pause queue", len(rows) == 1, err)
}

// Resume resumes the caller's queue. changed is false when it was not
// paused (nothing was written).
func (s *Store) Resume(ctx context.Context, c Caller, queue string) (ctl Control, changed bool, err error) {
	rows, err := s.q.QueueResume(ctx, s.pool, dbsqlc.QueueResumeParams{HumanID: c.HumanID, Queue: queue})
	return s.controlAfter(ctx, c, queue, "resume queue", len(rows) == 1, err)
}

// controlAfter is what Pause and Resume return once their statement ran
// (op, which wrote a row when changed): the queue's control read back, so
// both answer with the state as it now is, whoever changed it.
func (s *Store) controlAfter(ctx context.Context, c Caller, queue, op string, changed bool, err error) (Control, bool, error) {
	if err != nil {
		return Control{}, false, mapErr(err, op, "queue "+queue)
	}
	ctl, err := s.Control(ctx, c, queue)
	return ctl, changed, err
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
	return Control{
		Paused: r.Paused, PausedAt: r.PausedAt, UpdatedAt: &r.UpdatedAt,
		Limits:  limits(r.MaxRunning, r.KeyMaxRunning, r.RatePerSecond, r.RateBurst, r.KeyRatePerSecond, r.KeyRateBurst, r.KeyPatterns),
		Running: r.Running, LimitsAt: r.LimitsAt,
	}, nil
}

// QueueSummary is one queue of ListQueues: its depth by state and pause flag.
type QueueSummary struct {
	Queue  string
	Paused bool
	// Limits, LimitRunning and LimitsAt as Control's Limits, Running and
	// LimitsAt.
	Limits       Limits
	LimitRunning int32
	LimitsAt     *time.Time
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
		out[i] = QueueSummary{
			Queue: r.Queue, Paused: r.Paused, LimitRunning: r.LimitRunning, LimitsAt: r.LimitsAt,
			Limits: limits(r.MaxRunning, r.KeyMaxRunning, r.RatePerSecond, r.RateBurst, r.KeyRatePerSecond, r.KeyRateBurst, r.KeyPatterns),
			Stats: Stats{
				PendingReady: r.PendingReady, PendingScheduled: r.PendingScheduled, Running: r.Running,
				Completed: r.Completed, Dead: r.Dead, Cancelled: r.Cancelled, OldestPendingAgeSeconds: r.OldestPendingAgeSeconds,
			}}
	}
	return out, nil
}

// limits assembles Limits from queue_controls' nullable columns.
func limits(maxRunning, keyMaxRunning *int32, rate *float64, burst int32, keyRate *float64, keyBurst int32, patterns []byte) Limits {
	return Limits{
		MaxRunning: deref(maxRunning), KeyMaxRunning: deref(keyMaxRunning),
		Rate: deref(rate), RateBurst: burst, KeyRate: deref(keyRate), KeyRateBurst: keyBurst,
		KeyPatterns: decodePatterns(patterns),
	}
}

// deref is *n, or 0 for nil (a NULL limit: none).
func deref[N int32 | float64](n *N) N {
	if n == nil {
		return 0
	}
	return *n
}
