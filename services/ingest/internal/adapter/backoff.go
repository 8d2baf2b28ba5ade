package adapter

import (
	"context"
	"math/rand/v2"
	"time"
)

// Default bounds of a zero Backoff.
const (
	DefaultBackoffMin = 100 * time.Millisecond
	DefaultBackoffMax = 30 * time.Second
)

// Backoff computes capped exponential delays with full jitter. Jitter matters
// because several adapter instances failing on the same outage (the database,
// the source) would otherwise retry in lock-step and hammer it when it returns.
// The zero value uses DefaultBackoffMin and DefaultBackoffMax.
type Backoff struct {
	Min time.Duration // first delay's upper bound
	Max time.Duration // cap on any delay
}

// Delay returns the wait before retry number attempt (0 for the first retry):
// a uniformly random duration in [bound/2, bound] where bound is
// Min·2^attempt capped at Max. Keeping the lower half out avoids a run of
// near-zero waits that would defeat the backoff.
func (b Backoff) Delay(attempt int) time.Duration {
	lo, hi := b.Min, b.Max
	if lo <= 0 {
		lo = DefaultBackoffMin
	}
	if hi <= 0 {
		hi = DefaultBackoffMax
	}
	if lo > hi {
		lo = hi
	}
	bound := lo
	for i := 0; i < attempt && bound < hi; i++ {
		bound *= 2
	}
	bound = min(bound, hi)
	half := bound / 2
	// Jitter only spreads retries out; it needs no cryptographic randomness.
	return half + rand.N(bound-half+1) //nolint:gosec // G404: non-security jitter
}

// Sleep waits for d or until ctx ends, whichever comes first, and returns
// ctx.Err() in the latter case.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
