package ingest

import (
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/time/rate"
)

// limiters holds one token bucket per endpoint and per tenant on this node
// (a cluster of N nodes accepts up to N times the limit: the limit protects
// each node and the database from one sender, it is not a billing meter).
type limiters struct {
	mu sync.Mutex
	m  map[uuid.UUID]*rate.Limiter
}

// maxLimiters bounds the map; past it the buckets start over full, which
// only ever errs towards accepting.
const maxLimiters = 100_000

func newLimiters() *limiters { return &limiters{m: map[uuid.UUID]*rate.Limiter{}} }

// allow takes one token from key's bucket of perSecond (burst one second's
// worth); 0 means unlimited. When refused, it says how long until a token.
func (l *limiters) allow(key uuid.UUID, perSecond int, now time.Time) (bool, time.Duration) {
	if perSecond <= 0 {
		return true, 0
	}
	l.mu.Lock()
	lim, ok := l.m[key]
	if !ok || lim.Limit() != rate.Limit(perSecond) {
		if len(l.m) >= maxLimiters {
			clear(l.m)
		}
		lim = rate.NewLimiter(rate.Limit(perSecond), perSecond)
		l.m[key] = lim
	}
	l.mu.Unlock()
	r := lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}
