package auth

import (
	"sync"
	"time"
)

// cache remembers verified tokens (and, for at most negativeTTL, unknown
// ones) so that authentication costs no database round trip per RPC at load.
// A revocation, expiry or disable therefore takes effect within the TTL on
// every node: an entry is never served past its until, which counts from
// before the database looked.
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
	// refreshAt: from here on the entry is still served, but the first
	// request to see it re-verifies it in the background, so that steady
	// traffic never waits for the database when the entry would expire. Zero
	// for entries not worth refreshing (see put).
	refreshAt  time.Time
	refreshing bool // a request has claimed the refresh
}

// result is what a request carrying the entry's token gets.
func (e cacheEntry) result() (Principal, error) {
	if !e.known {
		return Principal{}, unauthenticated()
	}
	return e.p, nil
}

// negativeTTL caps the life of an unknown token's entry. Refusals are cheap
// to look up again, and a short life keeps them from piling up: a client
// retrying with a revoked token costs one lookup per second per node, a
// re-enabled credential works again within a second, and a flood of made-up
// tokens does not fill the cache with entries that no one will ask for
// twice.
const negativeTTL = time.Second

func newCache(ttl time.Duration, maxEntries int) *cache {
	return &cache{ttl: ttl, max: maxEntries, m: make(map[[32]byte]cacheEntry)}
}

// get returns the live entry for key. refresh is true for exactly one caller
// per entry once the entry is past its refreshAt: that caller must start the
// background refresh. A refresh that fails is not retried on this entry; it
// expires and the next request verifies synchronously, which reports the
// failure (so a database outage costs one background try per entry, not one
// per request).
func (c *cache) get(key [32]byte, now time.Time) (e cacheEntry, ok, refresh bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok = c.m[key]
	if !ok || !now.Before(e.until) {
		return cacheEntry{}, false, false
	}
	if !e.refreshAt.IsZero() && !now.Before(e.refreshAt) && !e.refreshing {
		e.refreshing = true
		c.m[key] = e
		refresh = true
	}
	return e, true, refresh
}

// refreshAfter is the part of the TTL an entry is served before the first
// request to see it refreshes it: the last quarter of its life is the
// window a background refresh has to finish in.
func refreshAfter(ttl time.Duration) time.Duration { return ttl - ttl/4 }

// put stores an entry verified at now (taken before the lookup started) for
// the TTL, or until validFor runs out if sooner (an unknown token's for
// negativeTTL at most), and returns it.
func (c *cache) put(key [32]byte, e cacheEntry, validFor time.Duration, now time.Time) cacheEntry {
	ttl := c.ttl
	if validFor > 0 && validFor < ttl {
		ttl = validFor
	}
	if !e.known {
		ttl = min(ttl, negativeTTL)
	}
	e.until = now.Add(ttl)
	// Only a verified token is refreshed ahead: an unknown one keeps its
	// short negative entry and is looked up again when that expires. An
	// entry cut short by the credential's own expiry is not refreshed either
	// when the refresh could not come before it; the credential is ending.
	if at := now.Add(refreshAfter(c.ttl)); e.known && at.Before(e.until) {
		e.refreshAt = at
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		c.evict(now)
	}
	c.m[key] = e
	return e
}

// evict makes room in a full cache: expired entries go first, then refusals
// (a flood of distinct made-up tokens must not push out the callers who
// hold real ones), and if every entry is a live verified token, all of them
// (they are looked up again as they come back). The caller holds c.mu.
func (c *cache) evict(now time.Time) {
	for k, old := range c.m {
		if !now.Before(old.until) {
			delete(c.m, k)
		}
	}
	if len(c.m) < c.max {
		return
	}
	for k, old := range c.m {
		if !old.known {
			delete(c.m, k)
		}
	}
	if len(c.m) >= c.max {
		clear(c.m)
	}
}
