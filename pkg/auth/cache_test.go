//go:build integration

package auth_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/switchboard/switchboard/pkg/auth"
)

// gate counts the authenticator's store lookups and holds each one until the
// test lets it go.
type gate struct {
	lookups atomic.Int32
	started chan struct{} // one per lookup, as it starts
	proceed chan struct{} // one lets one lookup go
	joined  chan struct{} // one per request waiting on a lookup
}

func newGate(t *testing.T, b *testBundle) *gate {
	t.Helper()
	g := &gate{started: make(chan struct{}, 100), proceed: make(chan struct{}, 100), joined: make(chan struct{}, 100)}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) }) // a failed test leaves no lookup held
	b.authn.SetLookupHook(func(context.Context) {
		g.lookups.Add(1)
		g.started <- struct{}{}
		select {
		case <-g.proceed:
		case <-done:
		}
	})
	b.authn.OnJoin(func() { g.joined <- struct{}{} })
	return g
}

func (g *gate) allow(n int) {
	for range n {
		g.proceed <- struct{}{}
	}
}

// recv takes one value from ch. The limit is a safety net against a hang,
// not a timing assertion.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		require.FailNow(t, "gave up waiting: "+what)
		panic("unreachable")
	}
}

// A crowd of requests carrying one token on an empty cache (or at expiry)
// sends the database one statement, not one each: each would stamp
// last_used_at on the same row and queue on its lock.
func TestConcurrentMissesShareOneLookup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := withToken(t.Context(), "Bearer "+b.mintAdmin(t, "root@example.com"))
	g := newGate(t, b)
	const n = 50
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := b.authn.Authorize(ctx, adminMethod)
			errs <- err
		}()
	}
	for range n {
		recv(t, g.joined, "every request waiting on the lookup")
	}
	g.allow(1)
	for range n {
		require.NoError(t, recv(t, errs, "a request's answer"))
	}
	require.EqualValues(t, 1, g.lookups.Load(), "one statement for all %d", n)
}

// cachedAdmin mints an administrator's token and has it verified once,
// through a gate (so the test sees every later lookup): the token, a context
// carrying it, and the gate.
func cachedAdmin(t *testing.T, b *testBundle) (string, context.Context, *gate) {
	t.Helper()
	tok := b.mintAdmin(t, "root@example.com")
	ctx := withToken(t.Context(), "Bearer "+tok)
	g := newGate(t, b)
	g.allow(1)
	_, err := b.authn.Authorize(ctx, adminMethod)
	require.NoError(t, err)
	recv(t, g.started, "the first lookup")
	return tok, ctx, g
}

// An entry in the last part of its life is still served at once, and the
// first request to see it refreshes it in the background, once: steady
// traffic never waits for the database when the entry would expire.
func TestAgingEntryIsRefreshedAheadOfExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok, ctx, g := cachedAdmin(t, b)
	until, ok := b.authn.CachedUntil(tok)
	require.True(t, ok)

	b.clock.Advance(auth.RefreshAfter(ttl))
	for range 10 {
		_, err := b.authn.Authorize(ctx, adminMethod)
		require.NoError(t, err, "served from the cache while the refresh is held")
	}
	recv(t, g.started, "the refresh")
	require.EqualValues(t, 2, g.lookups.Load(), "one refresh for the ten requests")
	g.allow(1)
	b.authn.WaitRefreshes()
	refreshed, ok := b.authn.CachedUntil(tok)
	require.True(t, ok)
	require.Equal(t, until.Add(auth.RefreshAfter(ttl)), refreshed, "a full TTL from the refresh")

	b.clock.Advance(ttl - auth.RefreshAfter(ttl))
	_, err := b.authn.Authorize(ctx, adminMethod)
	require.NoError(t, err, "the old entry's expiry passes unnoticed")
	require.EqualValues(t, 2, g.lookups.Load())
}

// Refreshing ahead does not stretch the revocation guarantee: a refresh that
// finds the credential revoked replaces the entry with a refusal, before the
// old entry would have expired.
func TestRefreshThatFindsARevocationRefuses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := withToken(t.Context(), "Bearer "+b.mintAdmin(t, "root@example.com"))
	g := newGate(t, b)
	g.allow(3)
	_, err := b.authn.Authorize(ctx, adminMethod)
	require.NoError(t, err)
	_, err = b.pool.Exec(t.Context(), "UPDATE credentials SET revoked_at = now()")
	require.NoError(t, err)

	b.clock.Advance(auth.RefreshAfter(ttl))
	_, err = b.authn.Authorize(ctx, adminMethod)
	require.NoError(t, err, "still served while the refresh runs")
	b.authn.WaitRefreshes()
	for range 3 {
		_, err = b.authn.Authorize(ctx, adminMethod)
		require.Equal(t, codes.Unauthenticated, code(err), "refused within the TTL")
	}
	require.EqualValues(t, 2, g.lookups.Load(), "the refusal is cached")
}

// A refresh that fails leaves the entry to expire when it would have: it is
// not retried per request (a database outage costs one background try per
// entry), and once the entry is over the request reports the outage.
func TestFailedRefreshDoesNotExtendTheEntry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := withToken(t.Context(), "Bearer "+b.mintAdmin(t, "root@example.com"))
	g := newGate(t, b)
	g.allow(3)
	_, err := b.authn.Authorize(ctx, adminMethod)
	require.NoError(t, err)
	b.pool.Close()

	b.clock.Advance(auth.RefreshAfter(ttl))
	for range 3 {
		_, err = b.authn.Authorize(ctx, adminMethod)
		require.NoError(t, err)
		b.authn.WaitRefreshes()
	}
	require.EqualValues(t, 2, g.lookups.Load(), "one background try")
	b.clock.Advance(ttl - auth.RefreshAfter(ttl))
	_, err = b.authn.Authorize(ctx, adminMethod)
	require.Equal(t, codes.Unavailable, code(err), "not served past its TTL")
	require.EqualValues(t, 3, g.lookups.Load())
}

// A request that gives up while waiting on a shared lookup returns at once
// with its own context's error; the lookup, detached from it, goes on for
// the others even though the one that gave up is the one that started it.
func TestCancelledWaiterLeavesTheSharedLookupRunning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	header := "Bearer " + b.mintAdmin(t, "root@example.com")
	g := newGate(t, b)
	ctxA, cancelA := context.WithCancel(withToken(t.Context(), header))
	defer cancelA()
	errA, errB := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := b.authn.Authorize(ctxA, adminMethod)
		errA <- err
	}()
	recv(t, g.started, "A's lookup")
	go func() {
		_, err := b.authn.Authorize(withToken(t.Context(), header), adminMethod)
		errB <- err
	}()
	recv(t, g.joined, "a request waiting")
	recv(t, g.joined, "the other request waiting")

	cancelA()
	err := recv(t, errA, "A's answer") // while the lookup is still held
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, codes.Canceled, code(err))
	g.allow(1)
	require.NoError(t, recv(t, errB, "B's answer"))
	require.EqualValues(t, 1, g.lookups.Load())
}
