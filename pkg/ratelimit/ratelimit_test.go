package ratelimit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/ratelimit"
)

// A bucket holds one second's worth, refuses the next with the wait until a
// token, keeps keys apart, and starts over when its rate changes.
func TestBuckets(t *testing.T) {
	t.Parallel()
	b := ratelimit.New[string]()
	now := time.Unix(1000, 0)
	for range 5 {
		ok, _ := b.Allow("a", 5, now)
		require.True(t, ok)
	}
	ok, wait := b.Allow("a", 5, now)
	require.False(t, ok)
	require.Equal(t, 200*time.Millisecond, wait)
	ok, _ = b.Allow("a", 5, now)
	require.False(t, ok, "a refusal takes no token, and gives none back")

	ok, _ = b.Allow("b", 5, now)
	require.True(t, ok, "another key has its own bucket")
	ok, _ = b.Allow("a", 5, now.Add(200*time.Millisecond))
	require.True(t, ok, "a token after the wait said")
	ok, _ = b.Allow("a", 10, now.Add(200*time.Millisecond))
	require.True(t, ok, "a new rate starts over full")
	ok, _ = b.Allow("a", 0, now)
	require.True(t, ok, "0 is unlimited")
}
