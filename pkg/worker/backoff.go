package worker

import (
	"math/rand/v2"
	"time"
)

// backoff is capped exponential backoff with "equal jitter": the n-th
// consecutive failure waits d/2 + rand[0, d/2] where d = min(max, base·2ⁿ),
// so waits grow but never fall to zero, and workers that failed together do
// not retry together.
type backoff struct {
	base, max time.Duration
	n         int
}

func (b *backoff) next() time.Duration {
	d := b.max
	if b.n < 30 {
		if e := b.base << b.n; e > 0 && e < b.max {
			d = e
		}
	}
	b.n++
	half := d / 2
	return max(time.Millisecond, half+rand.N(d-half+1)) //nolint:gosec // jitter needs no cryptographic randomness
}

func (b *backoff) reset() { b.n = 0 }
