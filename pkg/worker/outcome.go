package worker

import (
	"errors"
	"fmt"
)

// Outcome is how the lease of one claimed todo ended, as reported to
// Options.OnAck exactly once per claimed todo.
type Outcome int

const (
	// Completed means the server confirmed the todo's Complete (or CompleteBatch
	// item), possibly as already = true, the answer to a retry of a
	// Complete whose first answer was lost. The todo is COMPLETED; it will
	// not be handed out again. This is the only outcome to tie
	// exactly-once side effects to.
	Completed Outcome = iota + 1
	// Failed means the server confirmed the todo's Fail; it will be retried
	// later (by this or another worker) with the server's backoff or the
	// handler's RetryAfter delay.
	Failed
	// DeadLettered means the server confirmed a Fail that left the todo DEAD,
	// because the handler returned Permanent(err) or the todo had used up
	// its attempts. It will not be retried.
	DeadLettered
	// Released means the server confirmed the todo's Release (shutdown, or a
	// todo that never started): it is PENDING again without a failed
	// attempt and will be handed out again.
	Released
	// LeaseLost means the server answered that this worker's lease is gone
	// (FAILED_PRECONDITION or NOT_FOUND to a Heartbeat or to the ack):
	// it expired and the todo may be running elsewhere. The handler's
	// result was dropped; the todo will run again (unless someone else
	// already finished it). err wraps ErrLeaseLost.
	LeaseLost
	// Unconfirmed means the SDK gave up on the ack without a definitive answer:
	// transient errors (UNAVAILABLE, ABORTED, DEADLINE_EXCEEDED,
	// RESOURCE_EXHAUSTED, connection errors) lasted until the lease would
	// expire or Options.AckTimeout ran out, or the server answered with an
	// error retrying cannot fix (INTERNAL, INVALID_ARGUMENT,
	// PERMISSION_DENIED, UNAUTHENTICATED…). The server may or may not
	// have applied it: most likely the lease expires and the todo runs
	// again, but a Complete whose answer was lost may have committed. err
	// wraps ErrUnconfirmed and the last error.
	Unconfirmed
)

// String returns the Outcome's name ("completed", "lease_lost"…).
func (o Outcome) String() string {
	switch o {
	case Completed:
		return "completed"
	case Failed:
		return "failed"
	case DeadLettered:
		return "dead_lettered"
	case Released:
		return "released"
	case LeaseLost:
		return "lease_lost"
	case Unconfirmed:
		return "unconfirmed"
	default:
		return fmt.Sprintf("Outcome(%d)", int(o))
	}
}

// confirmed reports whether o is an outcome the server confirmed applying.
func (o Outcome) confirmed() bool {
	return o == Completed || o == Failed || o == DeadLettered || o == Released
}

// ErrUnconfirmed is wrapped by the error reported with Unconfirmed: the
// SDK stopped retrying an ack the server never confirmed.
var ErrUnconfirmed = errors.New("worker: ack not confirmed")
