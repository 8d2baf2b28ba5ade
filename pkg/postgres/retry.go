package postgres

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/switchboard/switchboard/pkg/apierr"
)

// Conflict retries. Writes lock their rows in one canonical order, so two
// of them wait on each other rather than deadlock; but a deadlock detector
// or a serialization failure can still roll a transaction back (a lock order
// a plan did not keep, a foreign-key check locking a parent row). Such a
// transaction did nothing and running it again is correct, so the server does
// that itself, a few times with a short jittered pause, before a caller ever
// sees ABORTED.
const (
	conflictAttempts = 5
	conflictPauseMin = 2 * time.Millisecond
	conflictPauseMax = 50 * time.Millisecond
)

// RetryConflicts runs fn, and runs it again while it fails with a deadlock
// or serialization failure (apierr.IsConflict), at most five times in all.
// fn must be a whole transaction (a single statement, or a BeginFunc), so a
// failed run left nothing behind. It returns fn's last error.
func RetryConflicts(ctx context.Context, fn func() error) error {
	pause := conflictPauseMin
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || attempt == conflictAttempts || !apierr.IsConflict(err) {
			return err
		}
		// Full jitter: the transactions that deadlocked must not retry in
		// step and meet again.
		t := time.NewTimer(time.Duration(rand.Int64N(int64(pause)) + 1)) //nolint:gosec // jitter, not a secret
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
		pause = min(2*pause, conflictPauseMax)
	}
}

// RetryConflicts1 is RetryConflicts for a fn with a result.
func RetryConflicts1[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	var out T
	err := RetryConflicts(ctx, func() error {
		var err error
		out, err = fn()
		return err
	})
	return out, err
}
