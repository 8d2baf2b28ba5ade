package queue

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard/switchboard/pkg/metrics"
	"github.com/switchboard/switchboard/pkg/pgnotify"
	"github.com/switchboard/switchboard/pkg/postgres"
	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// Todos is a node's one writer of the todos table, shared by the queue's
// RPCs and by every service that creates todos inside its own transaction
// (ingest stores an event and its todo in one commit). A todo that commits
// always announces itself the same way, whoever wrote it: this node's
// waiting claims of its queue wake at once, other nodes' through one
// coalesced pg_notify on the node's notifier (after the commit, never
// inside it), and the todo.enqueued lifecycle event is emitted.
type Todos struct {
	store    *store.Store
	waiters  *waiters
	wakeups  *pgnotify.Coalescer
	onChange func(TodoEvent)
	metrics  *metrics.Queue
}

// TodosOptions tune NewTodos; zero fields take their defaults.
type TodosOptions struct {
	// HotPool runs the statements every worker repeats (see
	// Options.HotPool). Default: the pool.
	HotPool *pgxpool.Pool
	// NotifyWindow coalesces wake-ups: at most one pg_notify per (tenant,
	// queue) per window. Default 5 ms.
	NotifyWindow time.Duration
	// OnChange, when set, is called after every committed lifecycle change
	// of a todo (the hook for realtime events). It runs on the writer's
	// goroutine and must not block.
	OnChange func(TodoEvent)
	// Metrics, when set, counts every committed change (the node's
	// Registry.Queue). Nil counts nothing.
	Metrics *metrics.Queue
}

// NewTodos returns the writer over pool; n is the node's notifier, which
// carries its wake-ups to the other nodes (the caller runs it). Without one
// (nil) the writer wakes only this process's claims: for tests of a single
// service.
func NewTodos(pool *pgxpool.Pool, n *pgnotify.Notifier, o TodosOptions) *Todos {
	if o.NotifyWindow <= 0 {
		o.NotifyWindow = defaultNotifyWindow
	}
	t := &Todos{store: store.New(pool, o.HotPool), waiters: newWaiters(), onChange: o.OnChange, metrics: o.Metrics}
	if n != nil {
		t.wakeups = n.Coalescer(notifyChannel, o.NotifyWindow)
	}
	return t
}

// EventTodos names the todos of the events one transaction stores: the
// events' tenant and source, and where their todos go.
type EventTodos = store.EventTodos

// EventTodo is a todo QueueEventTodos created: its id, its event's, and what
// its announcement carries.
type EventTodo = store.EventTodo

// QueueEventTodos queues into p, the caller's pipeline that holds its insert
// of events, the insert of a todo for every event of e's tenant and source
// that p's transaction stores: both go to the database in one round trip
// and commit together. The returned function reads the todos (in event
// order) once p is sent; announce them with Committed after the commit. The
// caller vouches for e's agent (ingest takes it from its own endpoint).
func (t *Todos) QueueEventTodos(ctx context.Context, p *postgres.Pipeline, e EventTodos) func() ([]EventTodo, error) {
	return t.store.QueueEventTodos(ctx, p, e)
}

// Committed announces todos whose insert (QueueEventTodos) committed,
// exactly as after an Enqueue.
func (t *Todos) Committed(human uuid.UUID, queue string, created []EventTodo) {
	if len(created) == 0 {
		return
	}
	for _, td := range created {
		t.emitEvent(TodoEvent{Kind: EventEnqueued, TodoID: td.ID, HumanID: human, Queue: queue, AgentID: td.AgentID, State: td.State})
	}
	t.announce(human, queue, len(created))
}

// announce tells claimers that queue (of human) has n new runnable todos,
// after the change committed: up to n waiters in this process at once (each
// claims at least one), other nodes through a coalesced pg_notify (which
// wakes all their waiters of the queue: the count is not carried).
func (t *Todos) announce(human uuid.UUID, queue string, n int) {
	k := queueKey{human: human, queue: queue}
	t.waiters.wakeN(k, max(n, 1), nil)
	if t.wakeups != nil {
		p := k.payload()
		t.wakeups.Mark(p, p)
	}
}

// resumed wakes every claim waiting on queue (of human) after its resume
// committed: all of this process's waiters (a paused queue's waiters all
// wait for the same thing) and, through the coalesced pg_notify, the other
// nodes'.
func (t *Todos) resumed(human uuid.UUID, queue string) {
	k := queueKey{human: human, queue: queue}
	t.waiters.wake(k)
	if t.wakeups != nil {
		p := k.payload()
		t.wakeups.Mark(p, p)
	}
}

// emit reports a committed change of td to the OnChange hook and the
// metrics, with the claim's wait and the run's duration from td's times
// (all from the database clock).
func (t *Todos) emit(kind EventKind, td store.Todo) {
	m := t.emitEvent(TodoEvent{Kind: kind, TodoID: td.ID, HumanID: td.HumanID, Queue: td.Queue, AgentID: td.AgentID, State: td.State})
	if m == nil || td.AttemptedAt == nil {
		return
	}
	switch kind {
	case EventClaimed:
		due := td.RunAt // when it became claimable: its creation, or a later run_at
		if td.CreatedAt.After(due) {
			due = td.CreatedAt
		}
		metrics.ObserveSince(m.Wait, due, *td.AttemptedAt)
	case EventCompleted:
		if td.FinishedAt != nil {
			metrics.ObserveSince(m.Run, *td.AttemptedAt, *td.FinishedAt)
		}
	}
}

// emitEvent reports a committed change to the OnChange hook and counts it;
// it returns the queue's series (nil without metrics). Each committed
// change is reported once, so each todo is counted once per transition
// however its ack was batched.
func (t *Todos) emitEvent(e TodoEvent) *metrics.QueueSeries {
	if t.onChange != nil {
		t.onChange(e)
	}
	m := t.metrics.For(e.HumanID, e.Queue)
	if m == nil {
		return nil
	}
	switch e.Kind {
	case EventEnqueued:
		m.Enqueued.Inc()
	case EventClaimed:
		m.Claimed.Inc()
	case EventCompleted:
		m.Completed.Inc()
	case EventFailed:
		if e.State == stateDead {
			m.Dead.Inc()
		} else {
			m.Failed.Inc()
		}
	case EventExpired:
		m.LeaseExpired.Inc()
		if e.State == stateDead {
			m.Dead.Inc()
		}
	}
	return m
}

// stateDead is todos.state of a dead-lettered todo.
const stateDead = "dead"
