// Package store is the QueueService's data access: typed wrappers over the
// sqlc queries in *.sql (one file per table) that return domain values and apierr errors,
// so handlers never see pgx, SQL text or constraint names.
//
// Tenancy is enforced by the SQL itself: every method takes the Caller, and
// each query matches only that human's rows and, for an agent credential,
// only todos addressed to that agent or to no agent. A todo out of reach is
// indistinguishable from a missing one (NOT_FOUND).
package store

import (
	"context"
	"fmt"
	"sync"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/queue/internal/store/dbsqlc"
)

// Todo is a row of todos. It is the generated row type itself: the queue
// has one table and the handlers render every column.
type Todo = dbsqlc.Todo

// Caller is who a query runs for.
type Caller struct {
	// HumanID is the tenant.
	HumanID uuid.UUID
	// AgentID is set when the credential acts as an agent: such a caller
	// reaches only todos addressed to it or to no agent.
	AgentID *uuid.UUID
}

// Outcome is the result of one item of a fenced batch write.
type Outcome int

// The outcomes of a fenced write.
const (
	// OK: the item was applied.
	OK Outcome = iota + 1
	// Stale: the todo exists but is not RUNNING with that lease token.
	Stale
	// NotFound: no such todo for this caller.
	NotFound
	// Already: the lease had already ended with this item's outcome (a
	// retried ack whose first run committed); nothing changed. A success.
	Already
)

// The lease outcomes (todos.lease_outcome) an ack can be a retry of.
const (
	ackCompleted = "completed"
	ackFailed    = "failed"
	ackReleased  = "released"
	// ackNone is what no lease ends with: heartbeats are never "already".
	ackNone = ""
)

// Store runs the queue queries over a pool.
type Store struct {
	pool *pgxpool.Pool
	// hot runs the statements every worker repeats (claim, heartbeat,
	// complete, and the outcome lookup after them). Its sessions should use
	// generic plans (plan_cache_mode=force_generic_plan, see the node's
	// pools); TestHotStatementsGenericPlans pins what those plans are.
	hot *pgxpool.Pool
	q   *dbsqlc.Queries
	// limited remembers, per queue (limitedKey), that its claims go
	// through TodoClaimLimited (the value: when that was last checked). A
	// hint only: the fast claim refuses a limited queue itself, and either
	// claim re-asks (QueueLimitedGet) after an empty answer, so a stale
	// entry costs one probe.
	limited sync.Map
	// pruner applies retention.todos; it remembers what it learned of each
	// tenant between passes.
	pruner *settings.Pruner
}

// New returns a store over pool; hot, when not nil, runs the worker
// statements.
func New(pool, hot *pgxpool.Pool) *Store {
	if hot == nil {
		hot = pool
	}
	s := &Store{pool: pool, hot: hot, q: dbsqlc.New()}
	s.pruner = settings.NewPruner(settings.RetentionTodos, settings.DefaultRetentionTodos, retention{s})
	return s
}

// constraints maps CHECK constraints to the request field to fix.
var constraints = &apierr.Constraints{Checks: map[string]apierr.FieldViolation{
	"queue_name_check":       {Field: "queue", Description: "must match ^[a-z0-9][a-z0-9._-]{0,62}$"},
	"todos_priority_check":   {Field: "priority", Description: "must be between 0 and 4"},
	"todos_dedupe_key_check": {Field: "dedupe_key", Description: "must be at most 255 characters"},
	"todos_result_check":     {Field: "result", Description: "must be a JSON object"},
}}

// mapErr turns a query error into a domain error (apierr.FromPostgres); what
// names the resource for NOT_FOUND, op the statement in the server log.
func mapErr(err error, op, what string) error { return apierr.FromPostgres(err, op, what, constraints) }

// notFound is the one answer for a todo that is missing or out of reach.
func notFound(what string) error { return apierr.NotFound("%s not found", what) }

func todoName(id int64) string { return fmt.Sprintf("todo %d", id) }

// staleOrMissing explains why a fenced write of one todo matched no row:
// NOT_FOUND when the caller cannot see the todo at all; the todo as it is now
// and already = true when l's lease already ended with want (a retried ack);
// otherwise FAILED_PRECONDITION (the token is stale or the todo is not
// running). The write changed nothing, so the extra read cannot race into a
// wrong change; at worst it reports the todo's newer state.
func (s *Store) staleOrMissing(ctx context.Context, c Caller, l Lease, want string) (Todo, bool, error) {
	t, err := s.q.TodoGet(ctx, s.pool, dbsqlc.TodoGetParams{ID: l.ID, HumanID: c.HumanID, CallerAgentID: c.AgentID})
	if err != nil {
		return Todo{}, false, mapErr(err, "get todo", todoName(l.ID))
	}
	if alreadyAcked(l.Token, t.LeaseToken, t.LeaseOutcome, want) {
		return t, true, nil
	}
	return Todo{}, false, staleErr(l.ID)
}

// alreadyAcked reports whether the lease token names the todo's latest lease
// and that lease ended with want.
func alreadyAcked(token int64, latest *int64, outcome *string, want string) bool {
	return want != ackNone && latest != nil && *latest == token && outcome != nil && *outcome == want
}

// staleErr is FAILED_PRECONDITION for a lease token that no longer holds.
func staleErr(id int64) error {
	return apierr.FailedPrecondition("todo %d: the lease token is stale (the lease expired, or the todo was released, finished or cancelled)", id)
}

// outcomes fills in, for every item not applied, whether it is Already
// (its lease ended with want), Stale or NotFound for this caller (one query
// for the whole batch).
func (s *Store) outcomes(ctx context.Context, c Caller, ls []Lease, applied []bool, want string) ([]Outcome, error) {
	out := make([]Outcome, len(ls))
	var missing []int64
	for i, l := range ls {
		if applied[i] {
			out[i] = OK
		} else {
			missing = append(missing, l.ID)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	rows, err := s.q.TodoAckStates(ctx, s.hot, dbsqlc.TodoAckStatesParams{Ids: missing, HumanID: c.HumanID, CallerAgentID: c.AgentID})
	if err != nil {
		return nil, mapErr(err, "ack states", "todo")
	}
	seen := make(map[int64]dbsqlc.TodoAckStatesRow, len(rows))
	for _, r := range rows {
		seen[r.ID] = r
	}
	for i, l := range ls {
		r, ok := seen[l.ID]
		switch {
		case out[i] == OK:
		case !ok:
			out[i] = NotFound
		case alreadyAcked(l.Token, &r.LeaseToken, &r.LeaseOutcome, want):
			out[i] = Already
		default:
			out[i] = Stale
		}
	}
	return out, nil
}
