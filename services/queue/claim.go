package queue

import (
	"context"
	"time"

	"go.uber.org/zap"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// Claim leases up to max_todos runnable todos. With wait set it long-polls:
//
//  1. it subscribes to wake-ups for (tenant, queue) BEFORE its first claim
//     attempt, so an enqueue that commits after that attempt's snapshot
//     always leaves a wake-up behind (the waiter's buffer holds one);
//  2. it tries to claim (one statement);
//  3. with nothing claimed it waits for the first of: a wake-up (an enqueue
//     on this node, or another node's pg_notify through the node's listen
//     connection), a poll tick (Options.PollInterval; correctness never
//     depends on NOTIFY), the wait deadline, shutdown, or the caller giving
//     up; then it goes back to 2 unless it is out of time.
func (s *Server) Claim(ctx context.Context, req *queuev1.ClaimRequest) (*queuev1.ClaimResponse, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	a, wait, err := claimArgs(req, s.opts.MaxWait)
	if err != nil {
		return nil, err
	}
	// Return empty-handed a little before the caller's own deadline rather
	// than let it expire mid-claim: todos leased by a claim whose response
	// is lost stay unavailable until their lease runs out.
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl)-deadlineMargin)
	}
	var todos []store.Todo
	if wait <= 0 {
		todos, err = s.store.Claim(ctx, c, a)
	} else {
		todos, err = s.claimWaiting(ctx, c, a, wait)
	}
	if err != nil {
		return nil, err
	}
	if s.afterClaim != nil {
		s.afterClaim()
	}
	if ctx.Err() != nil && len(todos) > 0 {
		// The caller went away after the claim committed: nobody will
		// receive these leases, so give the todos back now instead of
		// leaving them unavailable until the leases expire.
		s.releaseAbandoned(ctx, c, todos)
		return nil, ctx.Err()
	}
	out := make([]*queuev1.Todo, 0, len(todos))
	for _, t := range todos {
		pt, err := renderTodo(t)
		if err != nil {
			s.deadLetterUndeliverable(ctx, c, t, err)
			continue
		}
		pt.LeaseToken = *t.LeaseToken // the claimer's alone: no other answer carries it
		s.todos.emit(EventClaimed, t)
		out = append(out, pt)
	}
	return &queuev1.ClaimResponse{Todos: out}, nil
}

// deadLetterUndeliverable ends the claim of a todo no worker could receive
// (its stored JSON cannot be delivered: see renderTodo) by dead-lettering it
// with the reason, so it neither fails the claim of the todos leased with it
// nor comes back to fail the next one. Should that write fail, the lease
// expires and the expiry cap dead-letters it in the end.
func (s *Server) deadLetterUndeliverable(ctx context.Context, c store.Caller, t store.Todo, why error) {
	s.log.Warn("dead-lettering a claimed todo that cannot be delivered", zap.Int64("todo_id", t.ID), zap.Error(why))
	dead, _, err := s.store.Fail(ctx, c, store.FailArgs{
		Lease: store.Lease{ID: t.ID, Token: *t.LeaseToken}, DeadLetter: true,
		Error: truncate("dead-lettered by the server: "+why.Error(), maxErrorChars),
	})
	if err != nil {
		s.log.Warn("could not dead-letter an undeliverable todo; its lease will expire", zap.Int64("todo_id", t.ID), zap.Error(err))
		return
	}
	s.todos.emit(EventFailed, dead)
}

// abandonedReleaseTimeout bounds giving back a claim nobody received.
const abandonedReleaseTimeout = 5 * time.Second

// releaseAbandoned releases todos claimed for a caller that has gone, without
// penalty (Release raises max_attempts; the lease token still counts up). A
// failure only costs latency: the reaper returns them when the lease expires.
func (s *Server) releaseAbandoned(gone context.Context, c store.Caller, todos []store.Todo) {
	// The caller's context is done; keep its values, not its cancellation.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(gone), abandonedReleaseTimeout)
	defer cancel()
	for _, t := range todos {
		if _, _, err := s.store.Release(ctx, c, store.Lease{ID: t.ID, Token: *t.LeaseToken}, 0); err != nil {
			s.log.Warn("could not release an abandoned claim; the reaper will", zap.Int64("todo_id", t.ID), zap.Error(err))
		}
	}
}

// deadlineMargin is how long before the caller's deadline a long-poll
// Claim gives up waiting.
const deadlineMargin = 250 * time.Millisecond

func (s *Server) claimWaiting(ctx context.Context, c store.Caller, a store.ClaimArgs, wait time.Duration) (todos []store.Todo, err error) {
	k := queueKey{human: c.HumanID, queue: a.Queue}
	w, cancel := s.waiters.subscribe(k)
	var token tokenWait
	defer func() {
		cancel()
		token.stop()
		// Wake-ups are targeted (announce wakes as many waiters as there
		// are new todos), so one this claim will not act on — still pending,
		// or consumed by an attempt that failed — passes to another waiter
		// instead of waiting for its poll tick. So does the watch on a rate
		// limit's next token (tokenWait) when this claim leaves with work.
		if len(w.ch) > 0 || err != nil || (len(todos) > 0 && s.store.Limited(c, a.Queue)) {
			s.waiters.wakeN(k, 1, w)
		}
	}()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	poll := time.NewTicker(s.opts.PollInterval)
	defer poll.Stop()
	for {
		token.stop()
		todos, err = s.store.Claim(ctx, c, a)
		if s.claimAttempted != nil {
			s.claimAttempted()
		}
		if err != nil || len(todos) > 0 {
			return todos, err
		}
		if s.store.Limited(c, a.Queue) {
			token.start(ctx, s, c, k)
		}
		select {
		case <-w.ch:
		case <-token.c:
		case <-poll.C:
		case <-deadline.C:
			return nil, nil
		case <-s.waiters.closing:
			return nil, nil // shutting down: "may return empty-handed"
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// claimArgs resolves a ClaimRequest's defaults and re-checks its bounds
// (protovalidate checks them too, in the interceptor; the handler must be
// safe without it).
func claimArgs(req *queuev1.ClaimRequest, maxWait time.Duration) (store.ClaimArgs, time.Duration, error) {
	a := store.ClaimArgs{Queue: req.GetQueue(), Worker: req.GetWorkerId(), Max: req.GetMaxTodos(), LeaseSeconds: req.GetLeaseSeconds()}
	switch {
	case a.Queue == "":
		return a, 0, invalid("queue", "is required")
	case a.Worker == "" || len(a.Worker) > 255:
		return a, 0, invalid("worker_id", "must be 1 to 255 characters")
	case a.Max < 0 || a.Max > maxBatch:
		return a, 0, invalid("max_todos", "must be between 1 and 1000, or 0 for 1")
	case a.LeaseSeconds < 0 || a.LeaseSeconds > 3600:
		return a, 0, invalid("lease_seconds", "must be between 1 and 3600, or 0 for the default")
	}
	if a.Max == 0 {
		a.Max = 1
	}
	var wait time.Duration
	if d := req.GetWait(); d != nil {
		if err := d.CheckValid(); err != nil || d.AsDuration() < 0 || d.AsDuration() > 60*time.Second {
			return a, 0, invalid("wait", "must be between 0 and 60 s")
		}
		wait = min(d.AsDuration(), maxWait)
	}
	return a, wait, nil
}
