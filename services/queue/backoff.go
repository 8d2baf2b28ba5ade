package queue

import (
	"math/rand/v2"
	"time"
)

// backoff is the delay before retrying a todo whose attempt (lease token)
// just failed:
//
//	delay = min(cap, base · 2^(attempt-1)) · (0.5 + rand/2),  rand ∈ [0, 1)
//
// with base 1 s and cap 1 h by default (Options.BackoffBase/BackoffCap). So
// attempt 1 waits 0.5–1 s, attempt 2 1–2 s, attempt 5 8–16 s, and from
// attempt 13 on 30–60 min. The jitter (up to half the delay) spreads
// retries of todos that failed together, so a shared outage does not come
// back as a thundering herd. FailRequest.retry_after overrides it.
func backoff(attempt int32, base, maxDelay time.Duration) time.Duration {
	d := maxDelay
	// base · 2^n ≤ cap exactly when base ≤ cap >> n, a test that cannot
	// overflow (the shift itself could, for large n).
	if n := max(attempt-1, 0); n < 63 && base <= maxDelay>>n {
		d = base << n
	}
	return time.Duration(float64(d) * (0.5 + rand.Float64()/2)) //nolint:gosec // jitter, not a secret
}
