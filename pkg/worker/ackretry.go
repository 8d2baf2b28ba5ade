package worker

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// Backoff between the attempts of one ack (jittered, see backoff).
const (
	ackBackoffMin = 50 * time.Millisecond
	ackBackoffMax = 2 * time.Second
)

// minCallTimeout is the least time a Heartbeat or ack attempt is given,
// however short HeartbeatInterval is.
const minCallTimeout = time.Second

// ackAnswer is the server's answer about one lease in one ack attempt.
type ackAnswer struct {
	err     error // nil: applied
	already bool  // applied by an earlier attempt whose answer was lost
	dead    bool  // (Fail) the todo is DEAD now
}

// ackAttempt sends one attempt of an ack for ls and returns one answer per
// lease, in order. ctx bounds the attempt.
type ackAttempt func(ctx context.Context, ls []*lease) []ackAnswer

// attemptTimeout bounds one ack attempt: a call stuck on a node that died
// silently ends in DEADLINE_EXCEEDED and is retried on another node.
func (w *Worker) attemptTimeout() time.Duration {
	return max(w.opts.HeartbeatInterval, minCallTimeout)
}

// settleAcks ends the leases ls with attempt (Complete, Fail or Release,
// ok the outcome of success) and reports each lease's outcome. Transient
// errors are retried with jittered exponential backoff while the lease
// lasts: the heartbeater keeps renewing it between attempts, and stops only
// when the outcome is reported. A lease is given up (Unconfirmed) when its
// next attempt would start after the lease could have expired, or after
// Options.AckTimeout. The retries are not cut short by Run's cancellation:
// the outcome of finished work must still reach the server at shutdown.
func (w *Worker) settleAcks(ctx context.Context, hb *heartbeater, what string, ok Outcome, ls []*lease, attempt ackAttempt) {
	ctx = context.WithoutCancel(ctx)
	giveUp := time.Now().Add(w.opts.AckTimeout)
	bo := backoff{base: ackBackoffMin, max: ackBackoffMax}
	pending := ls
	for {
		hb.beginSend(pending)
		actx, cancel := context.WithTimeout(ctx, w.attemptTimeout())
		actx, end := w.ackContext(actx, what, pending)
		answers := attempt(actx, pending)
		end()
		cancel()
		var retry []*lease
		var errs []error
		for i, l := range pending {
			a := ackAnswer{err: status.Error(codes.Internal, "worker: no answer for the item")}
			if i < len(answers) {
				a = answers[i]
			}
			switch err := a.err; {
			case err == nil:
				o := ok
				if a.dead {
					o = DeadLettered
				}
				w.report(hb, l, o, nil, a.already)
			case isLeaseGone(err):
				w.report(hb, l, LeaseLost, fmt.Errorf("%w: %s: %w", ErrLeaseLost, what, err), false)
			case isTransient(err):
				retry = append(retry, l)
				errs = append(errs, err)
			default:
				// INTERNAL is a server bug, the others a client's: retrying
				// cannot help.
				w.report(hb, l, Unconfirmed, fmt.Errorf("%w: %s: %w", ErrUnconfirmed, what, err), false)
			}
		}
		if len(retry) == 0 {
			return
		}
		hb.endSend(retry) // renew them while waiting
		until := giveUp
		for _, l := range retry {
			if !l.retried {
				l.retried = true
				w.stats.acksRetried.Add(1)
			}
			if e := l.expiry(); e.Before(until) {
				until = e
			}
		}
		d := bo.next()
		w.log.Warn(what+" failed; retrying", zap.Int("todos", len(retry)), zap.Error(errs[0]), zap.Duration("backoff", d))
		if d = min(d, time.Until(until)); d > 0 {
			t := time.NewTimer(d)
			<-t.C
		}
		now := time.Now()
		pending = pending[:0:0]
		for i, l := range retry {
			switch {
			case !now.Before(giveUp):
				w.report(hb, l, Unconfirmed, fmt.Errorf("%w: %s: retried for AckTimeout (%s): %w", ErrUnconfirmed, what, w.opts.AckTimeout, errs[i]), false)
			case !now.Before(l.expiry()):
				w.report(hb, l, Unconfirmed, fmt.Errorf("%w: %s: the lease may have expired: %w", ErrUnconfirmed, what, errs[i]), false)
			default:
				pending = append(pending, l)
			}
		}
		if len(pending) == 0 {
			return
		}
		w.stats.ackRetries.Add(int64(len(pending)))
	}
}

// report settles l's outcome: its lease is no longer renewed, the outcome is
// counted and logged, and Options.OnAck is told, once per lease.
func (w *Worker) report(hb *heartbeater, l *lease, o Outcome, err error, already bool) {
	l.mu.Lock()
	dup := l.reported
	l.reported = true
	l.mu.Unlock()
	if dup {
		return
	}
	hb.drop(l)
	todo := l.todo
	switch o {
	case Completed:
		w.stats.completed.Add(1)
	case Failed:
		w.stats.failed.Add(1)
	case DeadLettered:
		w.stats.failed.Add(1)
		w.stats.deadLettered.Add(1)
	case Released:
		w.stats.released.Add(1)
	case LeaseLost:
		w.stats.leaseLost.Add(1)
		w.log.Warn("lease lost; result dropped", zap.Int64("todo_id", todo.GetId()), zap.Error(err))
	case Unconfirmed:
		w.stats.acksAbandoned.Add(1)
		w.log.Error("ack not confirmed; giving up (the lease will expire and the todo be retried, unless the ack committed)",
			zap.Int64("todo_id", todo.GetId()), zap.Error(err))
	}
	if already {
		w.stats.acksAlready.Add(1)
	}
	if l.retried && o.confirmed() {
		w.stats.acksRecovered.Add(1)
	}
	if w.opts.OnAck != nil {
		w.opts.OnAck(todo, o, err)
	}
}

// isLeaseGone reports whether err says the lease is not ours any more.
func isLeaseGone(err error) bool {
	c := status.Code(err)
	return c == codes.FailedPrecondition || c == codes.NotFound
}

// isTransient reports whether an ack that failed with err may succeed when
// retried: the database or a node was briefly unavailable, a transaction
// was aborted, the attempt timed out, the server shed load, or the
// connection failed (errors that are no gRPC status at all, and UNKNOWN,
// which the transport uses for broken streams).
func isTransient(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return true
	}
	switch st.Code() {
	case codes.Unavailable, codes.Aborted, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Unknown:
		return true
	default:
		return false
	}
}

// answer turns one single call's result into an ackAnswer.
func answer(err error, already bool, todo *queuev1.Todo) ackAnswer {
	return ackAnswer{err: err, already: already, dead: err == nil && todo.GetState() == queuev1.TodoState_TODO_STATE_DEAD}
}
