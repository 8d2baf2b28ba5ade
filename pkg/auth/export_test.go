//go:build integration

package auth

import (
	"context"
	"time"
)

// SetClock replaces the authenticator's clock (cache expiry) in tests.
func (a *Authenticator) SetClock(now func() time.Time) { a.now = now }

// SetLookupHook runs hook, with the lookup's context, before each credential
// lookup the authenticator sends to the store. Set it before any request.
func (a *Authenticator) SetLookupHook(hook func(ctx context.Context)) {
	lookup := a.lookup
	a.lookup = func(ctx context.Context, hash []byte) (Principal, time.Duration, error) {
		hook(ctx)
		return lookup(ctx, hash)
	}
}

// OnJoin runs joined each time a request starts waiting on a credential
// lookup (its own or one already in flight). Set it before any request.
func (a *Authenticator) OnJoin(joined func()) { a.joined = joined }

// WaitRefreshes waits for the background refreshes in flight to end.
func (a *Authenticator) WaitRefreshes() { a.refreshes.Wait() }

// CachedUntil reports until when token's cache entry is served.
func (a *Authenticator) CachedUntil(token string) (time.Time, bool) {
	var key [32]byte
	copy(key[:], a.hasher.Hash(token))
	a.cache.mu.Lock()
	defer a.cache.mu.Unlock()
	e, ok := a.cache.m[key]
	return e.until, ok
}

// SetCacheMax bounds the token cache to n entries (the default is far more
// than a test can fill).
func (a *Authenticator) SetCacheMax(n int) { a.cache.max = n }

// NegativeTTL is how long an unknown token's refusal is cached at most.
const NegativeTTL = negativeTTL

// RefreshAfter is how old a cache entry gets before it is refreshed.
func RefreshAfter(ttl time.Duration) time.Duration { return refreshAfter(ttl) }
