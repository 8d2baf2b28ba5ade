package auth

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/apierr"
)

// lookupTimeout bounds a shared credential lookup. No one caller's context
// governs it (the caller that started it may leave while others wait on it),
// so it needs a limit of its own.
const lookupTimeout = 5 * time.Second

// principal resolves a token, by its key, to its principal: from the cache
// while the entry lives, else by one database lookup shared by every request
// carrying the token at that moment.
func (a *Authenticator) principal(ctx context.Context, key [32]byte) (Principal, error) {
	if e, ok, refresh := a.cache.get(key, a.now()); ok {
		if refresh {
			a.refresh(ctx, key)
		}
		return e.result()
	}
	ch := a.lookups.DoChan(string(key[:]), func() (any, error) { return a.verify(ctx, key) })
	if a.joined != nil {
		a.joined()
	}
	select {
	case r := <-ch:
		if r.Err != nil {
			a.log.Warn("cannot verify credentials", zap.Error(r.Err))
			return Principal{}, apierr.Unavailable("credentials cannot be verified right now; retry")
		}
		e, _ := r.Val.(cacheEntry)
		return e.result()
	case <-ctx.Done():
		// This caller is gone; the lookup goes on for the others.
		return Principal{}, ctx.Err()
	}
}

// refresh re-verifies key's entry in the background while the entry is
// still served. The cache hands the refresh of an entry to one request only,
// so at most one runs per token, and lookupTimeout bounds it. After Close
// none starts: the entry expires when it would have.
func (a *Authenticator) refresh(ctx context.Context, key [32]byte) {
	a.refreshMu.Lock()
	defer a.refreshMu.Unlock()
	if a.closed {
		return
	}
	a.refreshes.Go(func() {
		_, err, _ := a.lookups.Do(string(key[:]), func() (any, error) { return a.verify(ctx, key) })
		if err != nil {
			a.log.Warn("cannot refresh cached credentials; they are served until their entry expires", zap.Error(err))
		}
	})
}

// Close ends the background refreshes: it starts no more and waits for those
// in flight (each bounded by lookupTimeout), or until ctx ends. A node calls
// it once its servers have drained and before its pool closes, so no refresh
// runs into a closed pool. Requests still verify synchronously after it.
func (a *Authenticator) Close(ctx context.Context) error {
	a.refreshMu.Lock()
	a.closed = true
	a.refreshMu.Unlock()
	done := make(chan struct{})
	go func() {
		a.refreshes.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// verify looks key up in the store and caches the outcome: the principal,
// or a short negative entry for a token that is unknown (or revoked, expired,
// disabled). It runs once for all the requests waiting on it, so it is
// detached from the context of the one that started it.
func (a *Authenticator) verify(ctx context.Context, key [32]byte) (cacheEntry, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
	defer cancel()
	// The entry's life counts from before the database looked: whatever it
	// saw was true then, so a revocation committed later still takes effect
	// within the TTL.
	now := a.now()
	p, validFor, err := a.lookup(ctx, key[:])
	switch {
	case errors.Is(err, errUnknownCredential):
		return a.cache.put(key, cacheEntry{}, 0, now), nil
	case err != nil:
		return cacheEntry{}, err
	}
	return a.cache.put(key, cacheEntry{p: p, known: true}, validFor, now), nil
}
