// Package store is the ingest service's data access: events and their todos
// stored in one statement, deduplicated by the sender's delivery id and,
// where the endpoint asks for it, by the body's SHA-256 within its window;
// and the endpoint lookup the webhook edge verifies against.
package store

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/ingest/internal/store/dbsqlc"
	"github.com/switchboard/switchboard/services/queue"
)

// Store runs the ingest queries over a pool.
type Store struct {
	pool *pgxpool.Pool
	// write runs the pipeline every event takes (EventInsertBatch and its
	// todos): the node's pool of generic-plan sessions when it has one,
	// else pool.
	write *pgxpool.Pool
	// todos is the queue's writer: an event's todo is inserted through it,
	// in the event's pipeline and transaction.
	todos *queue.Todos
	q     *dbsqlc.Queries
	// pruner applies retention.events; it remembers what it learned of
	// each tenant between passes.
	pruner *settings.Pruner
}

// New returns a store over pool. write, when not nil, runs the write
// transaction every event takes; its sessions should use
// plan_cache_mode=force_generic_plan (the node's hot pool): the statements'
// custom plans always look cheaper, since they see the batch's arrays, so
// PostgreSQL would otherwise plan them again on every execution.
func New(pool, write *pgxpool.Pool, todos *queue.Todos) *Store {
	if write == nil {
		write = pool
	}
	s := &Store{pool: pool, write: write, todos: todos, q: dbsqlc.New()}
	s.pruner = settings.NewPruner(settings.RetentionEvents, settings.DefaultRetentionEvents, retention{s})
	return s
}

// Event is one inbound event to store.
type Event struct {
	HumanID     uuid.UUID
	Source      string // dedup scope: "endpoint:<uuid>", "adapter:<uuid>" or "publish"
	EndpointID  *uuid.UUID
	AdapterID   *uuid.UUID
	PublishedBy *uuid.UUID
	// AgentID is the agent the event is for (events.agent_id): its todo's
	// addressee, or for a publish without a todo its publishing agent; nil
	// for the tenant's shared events, which every agent of it may read.
	AgentID *uuid.UUID
	Topic   string
	// DeliveryID is the sender's id for the delivery ("" = none); a second
	// event with the same id from the same source is a duplicate.
	DeliveryID string
	// BodySHA256, when set, also makes a second event with the same body
	// from the same source within BodyDedupWindow a duplicate: the
	// endpoint's body-hash dedup, which guards a delivery id that is
	// missing or not covered by the signature.
	BodySHA256      []byte
	BodyDedupWindow time.Duration
	Headers         map[string]string
	ContentType     string
	Payload         []byte
	VerifiedScheme  string
	SourceIP        *netip.Addr
	// TraceParent is the W3C traceparent of the request that delivered the
	// event (tracing.TraceParent; "" for none): the event and its todo
	// carry it, so the todo's worker joins the request's trace.
	TraceParent string
}

// Target is where the event's todo goes; an empty Queue means no todo.
type Target struct {
	Queue   string
	AgentID *uuid.UUID
	Kind    string
	// KindFromTopic makes the todo's kind the event's Topic, Kind when it is
	// empty (queue.EventTodos.KindFromTopic).
	KindFromTopic bool
	// Payload is the todo's payload (a JSON object); nil means a reference
	// to the event ({"event_id": …, "source": …}).
	Payload []byte
}

// Stored is the outcome of Ingest for one event.
type Stored struct {
	// Duplicate: the event was stored before; nothing was written.
	Duplicate  bool
	EventID    int64 // 0 for a duplicate
	ReceivedAt time.Time
	// Todos are the event's new todos, one per target, in the targets'
	// order (see Ingest); none for a duplicate or an event without a
	// target. The caller announces them with queue.Todos.Committed after
	// the commit.
	Todos []QueuedTodo
}

// TodoID is the event's first new todo (0 for none): what a publisher is
// answered and a lifecycle event names.
func (s Stored) TodoID() int64 {
	if len(s.Todos) == 0 {
		return 0
	}
	return s.Todos[0].Todo.ID
}

// recentBody takes the body's advisory lock (held to the end of tx) and
// reports whether the same body from the same source arrived within
// e.BodyDedupWindow.
func (s *Store) recentBody(ctx context.Context, tx pgx.Tx, e Event) (bool, error) {
	if err := s.q.LockBodyHash(ctx, tx, dbsqlc.LockBodyHashParams{Source: e.Source, BodySha256: e.BodySHA256}); err != nil {
		return false, fmt.Errorf("ingest: lock body hash: %w", err)
	}
	_, err := s.q.EventRecentByBody(ctx, tx, dbsqlc.EventRecentByBodyParams{
		HumanID: e.HumanID, Source: e.Source, BodySha256: e.BodySHA256, WindowSeconds: e.BodyDedupWindow.Seconds(),
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("ingest: recent body: %w", err)
	}
	return true, nil
}
