//go:build integration

package auth_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/auth"
)

// Close waits for a background refresh in flight (it would otherwise run into
// the node's closing pool) and starts no more; requests are still served.
func TestCloseWaitsForRefreshesAndStartsNoMore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, ctx, g := cachedAdmin(t, b)

	b.clock.Advance(auth.RefreshAfter(ttl))
	_, err := b.authn.Authorize(ctx, adminMethod)
	require.NoError(t, err, "served while its refresh is held")
	recv(t, g.started, "the refresh")
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, b.authn.Close(gone), context.Canceled, "the held refresh is waited for")
	g.allow(1)
	require.NoError(t, b.authn.Close(t.Context()))
	require.EqualValues(t, 2, g.lookups.Load())

	// The refreshed entry ages again: after Close no refresh starts, and the
	// entry is still served until it expires.
	b.clock.Advance(auth.RefreshAfter(ttl))
	g.allow(1)
	_, err = b.authn.Authorize(ctx, adminMethod)
	require.NoError(t, err)
	b.authn.WaitRefreshes()
	require.EqualValues(t, 2, g.lookups.Load(), "no refresh after Close")
}
