package queue

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard/switchboard/pkg/metrics"
	"github.com/switchboard/switchboard/pkg/pgnotify"
)

// Options tunes the service; every zero field takes the default named in
// its comment.
type Options struct {
	// HotPool, when set, runs the statements every worker repeats (claim,
	// heartbeat, complete). It should be a pool whose sessions use
	// plan_cache_mode=force_generic_plan, so PostgreSQL does not re-plan
	// them on every call. Default: the service's pool. The caller closes it.
	HotPool *pgxpool.Pool

	// PollInterval is how often a long-poll Claim retries on its own, the
	// fallback that keeps claims correct when a wake-up is lost (NOTIFY is
	// best-effort). Default 500 ms.
	PollInterval time.Duration
	// MaxWait caps ClaimRequest.wait. Default 60 s (the contract's maximum).
	MaxWait time.Duration
	// NotifyWindow coalesces pg_notify: at most one per (tenant, queue) per
	// window. Default 5 ms.
	NotifyWindow time.Duration
	// Todos is the node's shared writer of todos (NewTodos), which ingest
	// writes through too; when set, HotPool, NotifyWindow and OnChange are
	// the ones it was built with. Default: a writer of the service's own,
	// built from this Options.
	Todos *Todos

	// Notifier is the node's shared notifier: it carries wake-ups between
	// nodes (sends after commit, receives on its listen connection, with its
	// reconnect policy). The caller runs it, starting it after New and
	// before Components. Nil: the service builds a private one over its
	// pool and includes it in Components (standalone use, tests).
	Notifier *pgnotify.Notifier

	// ReapInterval is how often the reaper looks for expired leases.
	// Default 1 s.
	ReapInterval time.Duration
	// RepairInterval is how often each limited queue's running counters are
	// recounted from its todos (RepairOnce, on the reaper's tick; a queue
	// whose limits just changed on every tick until a repair ran 2 s after
	// the change). They only drift if a claim was in flight while the
	// limits changed. Default 30 s.
	RepairInterval time.Duration
	// ReapBatch bounds one reaper UPDATE. Default 1000.
	ReapBatch int32
	// MaxLeaseExpiries dead-letters a todo whose lease expired this many
	// times in a row (a todo that crashes its workers), even with attempts
	// left. Default 5.
	MaxLeaseExpiries int32

	// ScheduleInterval is how often the schedule ticker looks for due
	// ticks (every node runs one; see TickSchedules). Default 1 s. How many
	// schedules a tenant may have and how often each may tick are the
	// operator's settings tenant.limits.max_schedules and
	// queue.schedules.min_interval_seconds.
	ScheduleInterval time.Duration

	// RetentionInterval is how often finished todos are pruned by the
	// setting retention.todos. Default 1 min.
	RetentionInterval time.Duration
	// RetentionBatch bounds one DELETE. Default 1000.
	RetentionBatch int32
	// MaxBatchesPerTick bounds the reaper's and retention's work per tick,
	// so one node never holds a long run of statements. Default 100.
	MaxBatchesPerTick int

	// BackoffBase and BackoffCap shape the retry delay after Fail (see
	// backoff). Defaults 1 s and 1 h.
	BackoffBase, BackoffCap time.Duration

	// MergeWindow is how long a single-item Complete or Heartbeat may wait
	// for concurrent ones to share its batch statement (see merger); the
	// window starts at the oldest queued call. Default 1 ms. A negative
	// value means a zero window: merge only what is already queued while
	// the previous statement runs, adding no latency.
	MergeWindow time.Duration
	// MergeMaxItems flushes at once when this many calls are queued, and
	// bounds one statement. Default 500, at most 1000.
	MergeMaxItems int

	// OnChange, when set, is called after every committed lifecycle change
	// of a todo (the hook for realtime events). It runs on the request's
	// goroutine and must not block.
	OnChange func(TodoEvent)

	// Metrics, when set, is the node's registry: the mergers' batch sizes
	// and the depth gauges (a private Todos counts into its Queue series).
	// Nil records nothing.
	Metrics *metrics.Registry
	// DepthInterval is how often the depth gauges are refreshed (one
	// GROUP BY over the live todos). Default 15 s.
	DepthInterval time.Duration
}

// TodoEvent is one committed lifecycle change of a todo, or of a whole
// queue (Kind.QueueLevel).
type TodoEvent struct {
	Kind    EventKind
	TodoID  int64
	HumanID uuid.UUID
	Queue   string
	AgentID *uuid.UUID
	// State is the todo's state after the change ("pending", "running", …).
	State string
	// Progress and ProgressAt are set only for EventProgress: the JSON
	// object the worker reported, and when it was stored.
	Progress   json.RawMessage
	ProgressAt time.Time
	// ScheduleID and Tick are set only for EventScheduleFired: the schedule
	// and the tick its todo (TodoID) was made for.
	ScheduleID uuid.UUID
	Tick       time.Time
}

// EventKind names what happened to a todo.
type EventKind string

// The lifecycle changes OnChange reports.
const (
	EventEnqueued  EventKind = "enqueued"
	EventClaimed   EventKind = "claimed"
	EventCompleted EventKind = "completed"
	EventFailed    EventKind = "failed" // State says whether it will retry (pending) or is dead
	EventReleased  EventKind = "released"
	EventCancelled EventKind = "cancelled"
	EventExpired   EventKind = "expired" // lease expired; State pending or dead
	EventRedriven  EventKind = "redriven"
	EventRetried   EventKind = "retried"  // RetryTodo made a waiting pending todo due now
	EventProgress  EventKind = "progress" // a Heartbeat stored progress; State is running
)

// EventScheduleFired is reported after EventEnqueued for a todo a schedule
// made: ScheduleID and Tick say which schedule and tick.
const EventScheduleFired EventKind = "schedule.fired"

// The queue-level changes OnChange reports: TodoID is 0, AgentID nil, and
// State is the queue's ("paused" or "running"; for EventLimits "limited" or
// "unlimited").
const (
	EventPaused  EventKind = "queue.paused"
	EventResumed EventKind = "queue.resumed"
	EventLimits  EventKind = "queue.limits" // SetQueueLimits
)

// QueueLevel reports whether k is a change of a whole queue (EventPaused,
// EventResumed, EventLimits) rather than of one todo.
func (k EventKind) QueueLevel() bool {
	return k == EventPaused || k == EventResumed || k == EventLimits
}

// defaultNotifyWindow is Options.NotifyWindow's default.
const defaultNotifyWindow = 5 * time.Millisecond

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.PollInterval, 500*time.Millisecond)
	def(&o.MaxWait, 60*time.Second)
	def(&o.NotifyWindow, defaultNotifyWindow)
	def(&o.ReapInterval, time.Second)
	def(&o.RepairInterval, 30*time.Second)
	def(&o.RetentionInterval, time.Minute)
	def(&o.ScheduleInterval, time.Second)
	def(&o.BackoffBase, time.Second)
	def(&o.BackoffCap, time.Hour)
	def(&o.DepthInterval, 15*time.Second)
	switch {
	case o.MergeWindow == 0:
		o.MergeWindow = time.Millisecond
	case o.MergeWindow < 0:
		o.MergeWindow = 0
	}
	if o.MergeMaxItems <= 0 {
		o.MergeMaxItems = 500
	}
	o.MergeMaxItems = min(o.MergeMaxItems, maxBatch)
	if o.ReapBatch <= 0 {
		o.ReapBatch = 1000
	}
	if o.MaxLeaseExpiries <= 0 {
		o.MaxLeaseExpiries = 5
	}
	if o.RetentionBatch <= 0 {
		o.RetentionBatch = 1000
	}
	if o.MaxBatchesPerTick <= 0 {
		o.MaxBatchesPerTick = 100
	}
	return o
}
