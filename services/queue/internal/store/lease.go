package store

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/pkg/postgres"
	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/queue/internal/store/dbsqlc"
)

// Lease names one lease: a todo and the token its claim returned.
type Lease struct {
	ID    int64
	Token int64
}

// inLockOrder returns the positions of ls sorted by todo id (then token):
// every batch write passes its items in this order, so that the rows are
// locked in ascending id order and two batches never deadlock on each other.
func inLockOrder(ls []Lease) []int {
	order := make([]int, len(ls))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(ls[a].ID, ls[b].ID), cmp.Compare(ls[a].Token, ls[b].Token))
	})
	return order
}

// TodoID is the todo the lease is of.
func (l Lease) TodoID() int64 { return l.ID }

// HeartbeatItem renews one lease; LeaseSeconds 0 = the default. Progress,
// when not nil, is a JSON object stored as the todo's progress (only if the
// lease matches); nil keeps the stored one.
type HeartbeatItem struct {
	Lease
	LeaseSeconds int32
	Progress     []byte
}

// HeartbeatResult is one item's outcome; the rest is set when OK: the new
// lease end, and the todo's queue, agent and progress_at (what a
// todo.progress event carries).
type HeartbeatResult struct {
	Outcome    Outcome
	ExpiresAt  time.Time
	Queue      string
	AgentID    *uuid.UUID
	ProgressAt *time.Time
}

// Err is the outcome as the single-item RPC answers it (OutcomeError).
func (r HeartbeatResult) Err(id int64) error { return OutcomeError(r.Outcome, id) }

// Heartbeat renews leases in one statement; results are in item order.
func (s *Store) Heartbeat(ctx context.Context, c Caller, items []HeartbeatItem) ([]HeartbeatResult, error) {
	ls := postgres.Convert(items, func(it HeartbeatItem) Lease { return it.Lease })
	n := len(items)
	p := dbsqlc.TodoHeartbeatBatchParams{
		DefaultLeaseSeconds: settings.DefaultQueue.LeaseSeconds,
		HumanID:             c.HumanID, CallerAgentID: c.AgentID,
		Ids: make([]int64, n), Tokens: make([]int64, n), LeaseSeconds: make([]int32, n), Progress: make([]string, n),
	}
	for i, at := range inLockOrder(ls) {
		it := items[at]
		p.Ids[i], p.Tokens[i], p.LeaseSeconds[i], p.Progress[i] = it.ID, it.Token, it.LeaseSeconds, string(it.Progress)
	}
	rows, err := postgres.RetryConflicts1(ctx, func() ([]dbsqlc.TodoHeartbeatBatchRow, error) {
		return s.q.TodoHeartbeatBatch(ctx, s.hot, p)
	})
	if err != nil {
		return nil, mapErr(err, "heartbeat", "todo")
	}
	renewed := make(map[Lease]HeartbeatResult, len(rows))
	for _, r := range rows {
		renewed[Lease{ID: r.ID, Token: r.LeaseToken}] = HeartbeatResult{
			Outcome: OK, ExpiresAt: r.LeaseExpiresAt, Queue: r.Queue, AgentID: r.AgentID, ProgressAt: r.ProgressAt,
		}
	}
	oc, out, err := fenced(ctx, s, c, ls, renewed, ackNone)
	for i := range oc {
		out[i].Outcome = oc[i]
	}
	return out, err
}

// CompleteItem completes one lease; Result is a JSON object or nil.
type CompleteItem struct {
	Lease
	Result []byte
}

// Completed is a todo a completion applied to: what an outcome and a
// lifecycle event need.
type Completed = Settled

// CompleteResult is one item's outcome; Done is set when OK, and Todo (the
// whole row, completed) only by CompleteTodos, for OK and Already.
type CompleteResult struct {
	Outcome Outcome
	Done    Completed
	Todo    *Todo
}

// Err is the outcome as the single-item RPC answers it (OutcomeError).
func (r CompleteResult) Err(id int64) error { return OutcomeError(r.Outcome, id) }

// CompleteTodos is Complete that also returns each completed todo, read in
// the completing transaction (so exactly as that completion left it): for
// the single Complete, whose answer is the todo. CompleteBatch answers with
// outcomes only and uses Complete, which skips the read. A todo the
// completion removed (remove_on_complete) is answered as read just before,
// with what the completion wrote (removedAsCompleted).
func (s *Store) CompleteTodos(ctx context.Context, c Caller, items []CompleteItem) ([]CompleteResult, error) {
	var out []CompleteResult
	err := postgres.RetryConflicts(ctx, func() error {
		return pgx.BeginFunc(ctx, s.hot, func(tx pgx.Tx) error {
			before, err := s.q.TodoGetMany(ctx, tx, dbsqlc.TodoGetManyParams{
				Ids: postgres.Convert(items, func(it CompleteItem) int64 { return it.ID }), HumanID: c.HumanID, CallerAgentID: c.AgentID,
			})
			if err != nil {
				return mapErr(err, "read todos to complete", "todo")
			}
			if out, err = s.complete(ctx, tx, c, items); err != nil {
				return err
			}
			removedAsCompleted(out, items, before)
			ids := make([]int64, 0, len(out))
			for i, r := range out {
				if r.Outcome == OK || r.Outcome == Already {
					ids = append(ids, items[i].ID)
				}
			}
			if len(ids) == 0 {
				return nil
			}
			rows, err := s.q.TodoGetMany(ctx, tx, dbsqlc.TodoGetManyParams{Ids: ids, HumanID: c.HumanID, CallerAgentID: c.AgentID})
			if err != nil {
				return mapErr(err, "read completed todos", "todo")
			}
			byID := make(map[int64]*Todo, len(rows))
			for i := range rows {
				byID[rows[i].ID] = &rows[i]
			}
			for i := range out {
				if (out[i].Outcome == OK || out[i].Outcome == Already) && out[i].Todo == nil {
					out[i].Todo = byID[items[i].ID]
				}
			}
			return nil
		})
	})
	return out, err
}

// removedAsCompleted sets the answer of each item whose completion removed
// its todo: the row read before the completion, with the columns
// TodoSettle writes when it completes a todo it keeps.
func removedAsCompleted(out []CompleteResult, items []CompleteItem, before []Todo) {
	byID := make(map[int64]Todo, len(before))
	for _, t := range before {
		byID[t.ID] = t
	}
	for i := range out {
		t, ok := byID[items[i].ID]
		if out[i].Outcome != OK || !out[i].Done.Removed || !ok {
			continue
		}
		outcome := ackCompleted
		t.State, t.LeaseOwner, t.LeaseExpiresAt, t.LeaseExpiries = "completed", nil, nil, 0
		t.LeaseOutcome, t.FinishedAt, t.Result = &outcome, out[i].Done.FinishedAt, nil
		if len(items[i].Result) > 0 {
			t.Result = items[i].Result
		}
		out[i].Todo = &t
	}
}

// Complete marks leased todos COMPLETED in one statement; results are in
// item order. A deadlock or serialization failure is retried here.
func (s *Store) Complete(ctx context.Context, c Caller, items []CompleteItem) ([]CompleteResult, error) {
	return postgres.RetryConflicts1(ctx, func() ([]CompleteResult, error) { return s.complete(ctx, s.hot, c, items) })
}

func (s *Store) complete(ctx context.Context, db dbsqlc.DBTX, c Caller, items []CompleteItem) ([]CompleteResult, error) {
	ls := postgres.Convert(items, func(it CompleteItem) Lease { return it.Lease })
	rows, err := s.settle(ctx, db, settleArgs{Caller: c}, postgres.Convert(items, func(it CompleteItem) settleItem {
		return settleItem{Lease: it.Lease, action: actComplete, result: it.Result}
	}))
	if err != nil {
		return nil, mapErr(err, "complete", "todo")
	}
	done := make(map[Lease]Completed, len(rows))
	for _, r := range rows {
		done[Lease{ID: r.ID, Token: r.LeaseToken}] = r
	}
	oc, applied, err := fenced(ctx, s, c, ls, done, ackCompleted)
	out := make([]CompleteResult, len(oc))
	for i := range oc {
		out[i] = CompleteResult{Outcome: oc[i], Done: applied[i]}
	}
	return out, err
}

// FailArgs records one failed attempt.
type FailArgs struct {
	Lease
	Error string
	// RetryAfter, when set, is the delay before the retry (≥ 0); otherwise the
	// statement computes the attempt's backoff from Backoff (ignored when
	// dead-lettered either way).
	RetryAfter *time.Duration
	Backoff    Backoff
	DeadLetter bool
}

// Backoff shapes the delay before a failed todo's retry: Base · 2^(attempt-1)
// up to Cap, shortened by up to half by a random jitter (see TodoSettle).
type Backoff struct {
	Base, Cap time.Duration
}

// Fail records a failed attempt: PENDING after a.Backoff, or DEAD at the
// attempt cap or with a.DeadLetter. A stale token is FAILED_PRECONDITION, a
// todo the caller cannot see NOT_FOUND; a retry of a Fail that already
// committed answers the todo and already = true.
func (s *Store) Fail(ctx context.Context, c Caller, a FailArgs) (Todo, bool, error) {
	it := settleItem{Lease: a.Lease, action: actFail, text: a.Error, deadLetter: a.DeadLetter, delay: -1}
	if a.RetryAfter != nil {
		it.delay = a.RetryAfter.Seconds()
	}
	return s.fencedOne(ctx, c, a.Lease, "fail", ackFailed, func() (Todo, error) {
		return s.settleOne(ctx, s.hot, settleArgs{Caller: c, backoff: a.Backoff}, it)
	})
}

// Release gives a lease back without penalty, runnable again after delay (0
// keeps its place in the queue). Errors and already as Fail.
func (s *Store) Release(ctx context.Context, c Caller, l Lease, delay time.Duration) (Todo, bool, error) {
	return s.fencedOne(ctx, c, l, "release", ackReleased, func() (Todo, error) {
		return s.settleOne(ctx, s.hot, settleArgs{Caller: c}, settleItem{Lease: l, action: actRelease, delay: delay.Seconds()})
	})
}

// fencedOne runs a fenced single-row write (retrying conflicts) and explains
// a miss: stale, missing or already acked (staleOrMissing tells which).
func (s *Store) fencedOne(ctx context.Context, c Caller, l Lease, op, want string, write func() (Todo, error)) (Todo, bool, error) {
	t, err := postgres.RetryConflicts1(ctx, write)
	switch {
	case err == nil:
		return t, false, nil
	case errors.Is(err, pgx.ErrNoRows):
		return s.staleOrMissing(ctx, c, l, want)
	}
	return Todo{}, false, mapErr(err, op, todoName(l.ID))
}

// OutcomeError is the error of a single-item call (Heartbeat, Complete)
// whose item was not applied: NOT_FOUND or FAILED_PRECONDITION; nil for OK
// and Already.
func OutcomeError(o Outcome, id int64) error {
	switch o {
	case OK, Already:
		return nil
	case NotFound:
		return notFound(todoName(id))
	}
	return staleErr(id)
}

// fenced pairs a fenced batch's items (their leases) with what the
// statement returned for the ones it applied, keyed by lease: a batch may
// name one todo twice, and only the item whose token matched was applied.
// It returns each item's outcome (why the others were not applied, looked up
// in one query; Already when the lease had ended with want) and, for the
// applied ones, their value.
func fenced[V any](ctx context.Context, s *Store, c Caller, ls []Lease, got map[Lease]V, want string) ([]Outcome, []V, error) {
	applied := make([]bool, len(ls))
	for i, l := range ls {
		_, applied[i] = got[l]
	}
	oc, err := s.outcomes(ctx, c, ls, applied, want)
	if err != nil {
		return nil, nil, err
	}
	vals := make([]V, len(ls))
	for i, l := range ls {
		if oc[i] == OK {
			vals[i] = got[l]
		}
	}
	return oc, vals, nil
}
