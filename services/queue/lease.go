package queue

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// Heartbeat extends a lease; a stale token is FAILED_PRECONDITION. Concurrent
// calls share batch statements (Server.heartbeats); each returns after its
// own statement committed.
func (s *Server) Heartbeat(ctx context.Context, req *queuev1.HeartbeatRequest) (*queuev1.HeartbeatResponse, error) {
	it, r, err := merged(ctx, req, heartbeatItem, s.heartbeats)
	if err != nil {
		return nil, err
	}
	s.progressed(ctx, it, r)
	return &queuev1.HeartbeatResponse{LeaseExpiresAt: timestamppb.New(r.ExpiresAt)}, nil
}

// HeartbeatBatch extends many leases in one statement, with one outcome per
// item.
func (s *Server) HeartbeatBatch(ctx context.Context, req *queuev1.HeartbeatBatchRequest) (*queuev1.HeartbeatBatchResponse, error) {
	items, res, err := runBatch(ctx, req.GetItems(), heartbeatItem, s.store.Heartbeat)
	if err != nil {
		return nil, err
	}
	out := &queuev1.HeartbeatBatchResponse{Results: make([]*queuev1.HeartbeatBatchResult, len(res))}
	for i, r := range res {
		out.Results[i] = &queuev1.HeartbeatBatchResult{Id: items[i].ID, Outcome: outcomeProto(r.Outcome)}
		if r.Outcome == store.OK {
			out.Results[i].LeaseExpiresAt = timestamppb.New(r.ExpiresAt)
			s.progressed(ctx, items[i], r)
		}
	}
	return out, nil
}

// Complete marks a running todo COMPLETED, storing the optional result.
// Concurrent calls share batch statements (Server.completes); each returns
// after its own statement committed.
func (s *Server) Complete(ctx context.Context, req *queuev1.CompleteRequest) (*queuev1.CompleteResponse, error) {
	it, r, err := merged(ctx, req, completeItem, s.completes)
	if err != nil {
		return nil, err
	}
	if r.Todo == nil {
		// Cannot happen: the row was read in the transaction that completed
		// it (or, already completed, that found it so).
		return nil, fmt.Errorf("complete todo %d: the completed row was not read back", it.ID)
	}
	t := *r.Todo
	already := r.Outcome == store.Already
	if !already {
		s.todos.emit(EventCompleted, t)
		if r.Done.Freed {
			s.todos.announce(t.HumanID, t.Queue, 1) // a slot of a limited queue: a waiting claim may use it
		}
	}
	return &queuev1.CompleteResponse{Todo: s.todoProto(t), Already: already}, nil
}

// CompleteBatch completes many todos in one statement, with one outcome per
// item.
func (s *Server) CompleteBatch(ctx context.Context, req *queuev1.CompleteBatchRequest) (*queuev1.CompleteBatchResponse, error) {
	items, res, err := runBatch(ctx, req.GetItems(), completeItem, s.store.Complete)
	if err != nil {
		return nil, err
	}
	out := &queuev1.CompleteBatchResponse{Results: make([]*queuev1.CompleteBatchResult, len(res))}
	for i, r := range res {
		out.Results[i] = &queuev1.CompleteBatchResult{Id: items[i].ID, Outcome: outcomeProto(r.Outcome)}
		if r.Outcome == store.OK {
			d := r.Done
			m := s.todos.emitEvent(TodoEvent{Kind: EventCompleted, TodoID: d.ID, HumanID: d.HumanID, Queue: d.Queue, AgentID: d.AgentID, State: d.State})
			if m != nil {
				m.Run.Observe(d.RunSeconds)
			}
			if d.Freed {
				s.todos.announce(d.HumanID, d.Queue, 1) // a slot of a limited queue: a waiting claim may use it
			}
		}
	}
	return out, nil
}

// Fail records a failed attempt: a retry after the backoff (or retry_after),
// or DEAD at the attempt cap or with dead_letter.
func (s *Server) Fail(ctx context.Context, req *queuev1.FailRequest) (*queuev1.FailResponse, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	l, err := lease("", req.GetId(), req.GetLeaseToken())
	if err != nil {
		return nil, err
	}
	if req.GetError() == "" {
		return nil, invalid("error", "is required")
	}
	a := store.FailArgs{
		Lease: l, Error: truncate(req.GetError(), maxErrorChars), DeadLetter: req.GetDeadLetter(),
		Backoff: store.Backoff{Base: s.opts.BackoffBase, Cap: s.opts.BackoffCap},
	}
	if ra := req.GetRetryAfter(); ra != nil {
		if err := ra.CheckValid(); err != nil || ra.AsDuration() < 0 || ra.AsDuration() > maxRetryAfter {
			return nil, invalid("retry_after", "must be between 0 s and 30 days")
		}
		d := ra.AsDuration()
		a.RetryAfter = &d
	}
	t, already, err := s.store.Fail(ctx, c, a)
	pt, err := s.acked(EventFailed, already)(t, err)
	return apierr.Reply(&queuev1.FailResponse{Todo: pt, Already: already}, err)
}

// Release gives a running todo back without penalty.
func (s *Server) Release(ctx context.Context, req *queuev1.ReleaseRequest) (*queuev1.ReleaseResponse, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	l, err := lease("", req.GetId(), req.GetLeaseToken())
	if err != nil {
		return nil, err
	}
	var delay time.Duration
	if d := req.GetDelay(); d != nil {
		if err := d.CheckValid(); err != nil || d.AsDuration() < 0 || d.AsDuration() > time.Hour {
			return nil, invalid("delay", "must be between 0 s and 1 hour")
		}
		delay = d.AsDuration()
	}
	t, already, err := s.store.Release(ctx, c, l, delay)
	if err == nil && !already && delay == 0 {
		s.todos.announce(t.HumanID, t.Queue, 1)
	}
	pt, err := s.acked(EventReleased, already)(t, err)
	return apierr.Reply(&queuev1.ReleaseResponse{Todo: pt, Already: already}, err)
}

// maxRetryAfter is FailRequest.retry_after's upper bound (30 days).
const maxRetryAfter = 30 * 24 * time.Hour

func itemPrefix(i int) string { return fmt.Sprintf("items[%d].", i) }

// merged runs a single-item lease call: its caller, its item (parse), the
// batch statement the merger shares among concurrent calls, and the item's
// outcome as the call's error (a stale token or an unknown todo).
func merged[P any, I interface{ TodoID() int64 }, R interface{ Err(id int64) error }](ctx context.Context, req P,
	parse func(prefix string, r P) (I, error), m *merger[I, R],
) (I, R, error) {
	var it I
	var r R
	c, err := caller(ctx)
	if err != nil {
		return it, r, err
	}
	if it, err = parse("", req); err != nil {
		return it, r, err
	}
	if r, err = m.Do(ctx, keyOf(c), it); err != nil {
		return it, r, err
	}
	return it, r, r.Err(it.TodoID())
}

// runBatch checks a batch lease call (its caller, 1–1000 items, and each
// item through parse; errors name the item's index), then runs the items in
// one statement and returns them with their results, item i's at index i.
func runBatch[P, I, R any](ctx context.Context, reqs []P, parse func(prefix string, r P) (I, error), run func(context.Context, store.Caller, []I) ([]R, error)) ([]I, []R, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, nil, err
	}
	if n := len(reqs); n == 0 || n > maxBatch {
		return nil, nil, invalid("items", "must hold 1 to 1000 items")
	}
	items := make([]I, len(reqs))
	for i, r := range reqs {
		if items[i], err = parse(itemPrefix(i), r); err != nil {
			return nil, nil, err
		}
	}
	res, err := run(ctx, c, items)
	if err != nil {
		return nil, nil, err
	}
	return items, res, nil
}

// lease checks a (todo id, lease token) pair.
func lease(prefix string, id, token int64) (store.Lease, error) {
	if id <= 0 {
		return store.Lease{}, invalid(prefix+"id", "must be ≥ 1")
	}
	if token <= 0 {
		return store.Lease{}, invalid(prefix+"lease_token", "must be ≥ 1 (the lease_token returned by Claim)")
	}
	return store.Lease{ID: id, Token: token}, nil
}

func heartbeatItem(prefix string, r *queuev1.HeartbeatRequest) (store.HeartbeatItem, error) {
	l, err := lease(prefix, r.GetId(), r.GetLeaseToken())
	if err != nil {
		return store.HeartbeatItem{}, err
	}
	if s := r.GetLeaseSeconds(); s < 0 || s > 3600 {
		return store.HeartbeatItem{}, invalid(prefix+"lease_seconds", "must be between 1 and 3600, or 0 for the default")
	}
	it := store.HeartbeatItem{Lease: l, LeaseSeconds: r.GetLeaseSeconds()}
	if r.GetProgress() != nil {
		if it.Progress, err = jsonObjectWithin(prefix+"progress", r.GetProgress(), maxProgressBytes, "1 KiB"); err != nil {
			return store.HeartbeatItem{}, err
		}
	}
	return it, nil
}

func completeItem(prefix string, r *queuev1.CompleteRequest) (store.CompleteItem, error) {
	l, err := lease(prefix, r.GetId(), r.GetLeaseToken())
	if err != nil {
		return store.CompleteItem{}, err
	}
	it := store.CompleteItem{Lease: l}
	if r.GetResult() != nil {
		if it.Result, err = jsonObject(prefix+"result", r.GetResult()); err != nil {
			return store.CompleteItem{}, err
		}
	}
	return it, nil
}

func outcomeProto(o store.Outcome) queuev1.BatchOutcome {
	switch o {
	case store.OK:
		return queuev1.BatchOutcome_BATCH_OUTCOME_OK
	case store.Stale:
		return queuev1.BatchOutcome_BATCH_OUTCOME_STALE_LEASE
	case store.NotFound:
		return queuev1.BatchOutcome_BATCH_OUTCOME_NOT_FOUND
	case store.Already:
		return queuev1.BatchOutcome_BATCH_OUTCOME_ALREADY
	}
	return queuev1.BatchOutcome_BATCH_OUTCOME_UNSPECIFIED
}
