package auth

import (
	"sync"
	"time"
)

// cache remembers verified tokens (and, briefly, unknown ones) so that
// authentication costs no database round trip per RPC at load. A revocation,
// expiry or disable therefore takes effect within the TTL on every node.
type cache struct {
	ttl time.Duration
	max int

	mu sync.Mutex
	m  map[[32]byte]cacheEntry
}

type cacheEntry struct {
	p     Principal
	known bool
	until time.Time
}

func newCache(ttl time.Duration, maxEntries int) *cache {
	return &cache{ttl: ttl, max: maxEntries, m: make(map[[32]byte]cacheEntry)}
}

func (c *cache) get(key [32]byte, now time.Time) (cacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || !now.Before(e.until) {
		return cacheEntry{}, false
	}
	return e, true
}

// put stores an entry for the TTL, or until validFor runs out if sooner.
func (c *cache) put(key [32]byte, e cacheEntry, validFor time.Duration, now time.Time) {
	ttl := c.ttl
	if validFor > 0 && validFor < ttl {
		ttl = validFor
	}
	e.until = now.Add(ttl)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		for k, old := range c.m {
			if !now.Before(old.until) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= c.max { // all live: a flood of distinct tokens; start over
			clear(c.m)
		}
	}
	c.m[key] = e
}
