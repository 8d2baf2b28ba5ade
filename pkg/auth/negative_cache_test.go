//go:build integration

package auth_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/switchboard/switchboard/pkg/auth"
)

// An unknown token's refusal is cached for NegativeTTL, not the TTL: a
// retrying client costs a lookup a second, and a credential enabled again
// works within that second.
func TestUnknownTokenRefusalIsCachedBriefly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	unknown, _, err := auth.NewToken()
	require.NoError(t, err)
	ctx := withToken(t.Context(), "Bearer "+unknown)
	g := newGate(t, b)
	g.allow(2)
	looked := b.clock.Now()

	_, err = b.authn.Authorize(ctx, adminMethod)
	require.Equal(t, codes.Unauthenticated, code(err))
	until, ok := b.authn.CachedUntil(unknown)
	require.True(t, ok, "the refusal is cached")
	require.Equal(t, looked.Add(auth.NegativeTTL), until)
	require.Less(t, auth.NegativeTTL, ttl)

	_, err = b.authn.Authorize(ctx, adminMethod)
	require.Equal(t, codes.Unauthenticated, code(err))
	require.EqualValues(t, 1, g.lookups.Load(), "the second refusal comes from the cache")

	b.clock.Advance(auth.NegativeTTL)
	_, err = b.authn.Authorize(ctx, adminMethod)
	require.Equal(t, codes.Unauthenticated, code(err))
	require.EqualValues(t, 2, g.lookups.Load(), "looked up again once the refusal expired")
}

// Made-up tokens that fill the cache push out refusals, not the entries of
// callers with real tokens (which would then all wait on the database).
func TestFloodOfUnknownTokensKeepsVerifiedEntries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const maxEntries = 8
	b.authn.SetCacheMax(maxEntries)
	tok := b.mintAdmin(t, "root@example.com")
	_, err := b.authn.Authorize(withToken(t.Context(), "Bearer "+tok), adminMethod)
	require.NoError(t, err)

	for range 3 * maxEntries {
		unknown, _, err := auth.NewToken()
		require.NoError(t, err)
		_, err = b.authn.Authorize(withToken(t.Context(), "Bearer "+unknown), adminMethod)
		require.Equal(t, codes.Unauthenticated, code(err))
	}
	_, ok := b.authn.CachedUntil(tok)
	require.True(t, ok, "the verified entry survived the flood")
}
