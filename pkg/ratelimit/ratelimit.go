// Package ratelimit is the node-local rate limit the edges share: one token
// bucket per key (an endpoint, a tenant, a tenant's durable publishes),
// filled at the caller's rate and holding one second's worth. It counts on
// one node: a cluster of N nodes accepts up to N times the rate, which is
// what it is for (protecting each node and the database from one sender);
// it is not a meter.
package ratelimit

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// MaxKeys bounds the buckets one Buckets holds; past it every bucket starts
// over full, which only ever errs towards accepting.
const MaxKeys = 100_000

// Buckets is a set of token buckets by key, safe for concurrent use.
type Buckets[K comparable] struct {
	mu sync.Mutex
	m  map[K]*rate.Limiter
}

// New returns an empty set.
func New[K comparable]() *Buckets[K] { return &Buckets[K]{m: map[K]*rate.Limiter{}} }

// Allow takes one token from key's bucket of perSecond (burst one second's
// worth); perSecond ≤ 0 means unlimited. A bucket whose rate changed starts
// over full at the new rate. When there is no token it takes nothing (a
// refused call costs nothing) and says how long until there is one.
func (b *Buckets[K]) Allow(key K, perSecond int, now time.Time) (bool, time.Duration) {
	if perSecond <= 0 {
		return true, 0
	}
	b.mu.Lock()
	lim, ok := b.m[key]
	if !ok || lim.Limit() != rate.Limit(perSecond) {
		if len(b.m) >= MaxKeys {
			clear(b.m)
		}
		lim = rate.NewLimiter(rate.Limit(perSecond), perSecond)
		b.m[key] = lim
	}
	b.mu.Unlock()
	r := lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}
