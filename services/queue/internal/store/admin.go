package store

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/postgres"
	"github.com/switchboard/switchboard/services/queue/internal/store/dbsqlc"
)

// Get returns one todo the caller may see.
func (s *Store) Get(ctx context.Context, c Caller, id int64) (Todo, error) {
	r, err := s.q.TodoGet(ctx, s.pool, dbsqlc.TodoGetParams{ID: id, HumanID: c.HumanID, CallerAgentID: c.AgentID})
	if err != nil {
		return Todo{}, mapErr(err, "get todo", todoName(id))
	}
	return r, nil
}

// Cancel moves a PENDING or RUNNING todo to CANCELLED: FAILED_PRECONDITION
// when it has already finished, NOT_FOUND when the caller cannot see it.
func (s *Store) Cancel(ctx context.Context, c Caller, id int64, reason string) (Todo, error) {
	r, err := s.settleOne(ctx, s.pool, settleArgs{Caller: c}, settleItem{Lease: Lease{ID: id}, action: actCancel, text: reason})
	if err == nil {
		return r, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Todo{}, mapErr(err, "cancel", todoName(id))
	}
	cur, err := s.Get(ctx, c, id)
	if err != nil {
		return Todo{}, err
	}
	return Todo{}, apierr.FailedPrecondition("todo %d is already %s", id, cur.State)
}

// RetryNow makes a PENDING todo that is waiting (run_at in the future) due
// now. changed is false for a PENDING todo already due: it is returned as
// it is. Any other state is FAILED_PRECONDITION; a todo the caller cannot
// see is NOT_FOUND.
func (s *Store) RetryNow(ctx context.Context, c Caller, id int64) (Todo, bool, error) {
	r, err := s.q.TodoRetryNow(ctx, s.pool, dbsqlc.TodoRetryNowParams{ID: id, HumanID: c.HumanID, CallerAgentID: c.AgentID})
	if err == nil {
		return r, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Todo{}, false, mapErr(err, "retry", todoName(id))
	}
	cur, err := s.Get(ctx, c, id)
	switch {
	case err != nil:
		return Todo{}, false, err
	case cur.State == "pending":
		return cur, false, nil // already due: nothing to do
	case cur.State == "dead":
		return Todo{}, false, apierr.FailedPrecondition("todo %d is dead: redrive it (Redrive with its id) to run it again", id)
	case cur.State == "cancelled":
		return Todo{}, false, apierr.FailedPrecondition("todo %d is cancelled: a cancelled todo does not run again; enqueue a new one", id)
	}
	return Todo{}, false, apierr.FailedPrecondition("todo %d is %s: only a pending todo can be retried now", id, cur.State)
}

// ListFilter selects todos; nil fields (and EventID 0) match everything.
type ListFilter struct {
	Queue   *string
	State   *string
	AgentID *uuid.UUID
	Kind    *string
	EventID int64
	// CreatedAfter (inclusive) and CreatedBefore (exclusive) bound created_at.
	CreatedAfter, CreatedBefore *time.Time
	// BeforeID continues a listing after the last id seen.
	BeforeID *int64
	Limit    int32
}

// List returns the caller's todos, newest first. An event's todos are
// found through the event_id index (TodoListByEvent), whatever the plan.
func (s *Store) List(ctx context.Context, c Caller, f ListFilter) ([]Todo, error) {
	var (
		rows []Todo
		err  error
	)
	if f.EventID > 0 {
		rows, err = s.q.TodoListByEvent(ctx, s.pool, dbsqlc.TodoListByEventParams{
			EventID: f.EventID, HumanID: c.HumanID, Queue: f.Queue, State: f.State, AgentID: f.AgentID, Kind: f.Kind,
			CreatedAfter: f.CreatedAfter, CreatedBefore: f.CreatedBefore,
			BeforeID: f.BeforeID, CallerAgentID: c.AgentID, PageSize: f.Limit,
		})
	} else {
		rows, err = s.q.TodoList(ctx, s.pool, dbsqlc.TodoListParams{
			HumanID: c.HumanID, Queue: f.Queue, State: f.State, AgentID: f.AgentID, Kind: f.Kind,
			CreatedAfter: f.CreatedAfter, CreatedBefore: f.CreatedBefore,
			BeforeID: f.BeforeID, CallerAgentID: c.AgentID, PageSize: f.Limit,
		})
	}
	if err != nil {
		return nil, mapErr(err, "list todos", "todo")
	}
	return rows, nil
}

// RedriveIDs moves the listed DEAD todos of a queue back to PENDING and
// returns the ids it moved (others are skipped).
func (s *Store) RedriveIDs(ctx context.Context, c Caller, queue string, ids []int64) ([]int64, error) {
	// Ascending ids: the canonical lock order of every multi-row write.
	p := dbsqlc.TodoRedriveByIDsParams{HumanID: c.HumanID, Queue: queue, Ids: slices.Sorted(slices.Values(ids)), CallerAgentID: c.AgentID}
	moved, err := postgres.RetryConflicts1(ctx, func() ([]int64, error) { return s.q.TodoRedriveByIDs(ctx, s.pool, p) })
	if err != nil {
		return nil, mapErr(err, "redrive", "queue "+queue)
	}
	return moved, nil
}

// redriveBatch bounds each redrive transaction.
const redriveBatch = 1000

// RedriveQueue moves up to limit DEAD todos of a queue (oldest first; 0 =
// all) back to PENDING, in batches of at most 1000 rows, each its own short
// transaction, and returns how many it moved.
func (s *Store) RedriveQueue(ctx context.Context, c Caller, queue string, limit int64) (int64, error) {
	var total int64
	for limit == 0 || total < limit {
		n := int64(redriveBatch)
		if limit > 0 {
			n = min(n, limit-total)
		}
		moved, err := s.q.TodoRedriveQueue(ctx, s.pool, dbsqlc.TodoRedriveQueueParams{
			HumanID: c.HumanID, Queue: queue, CallerAgentID: c.AgentID, BatchSize: int32(n), //nolint:gosec // n ≤ 1000
		})
		if err != nil {
			return total, mapErr(err, "redrive queue", "queue "+queue)
		}
		total += moved
		if moved < n {
			break
		}
	}
	return total, nil
}
