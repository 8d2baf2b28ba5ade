package adapter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBackoffDelay(t *testing.T) {
	t.Parallel()
	b := Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	for attempt := range 10 {
		bound := min(100*time.Millisecond<<attempt, time.Second)
		for range 50 {
			d := b.Delay(attempt)
			assert.GreaterOrEqual(t, d, bound/2)
			assert.LessOrEqual(t, d, bound)
		}
	}
	assert.LessOrEqual(t, Backoff{}.Delay(100), DefaultBackoffMax)
}

func TestSleepCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, Sleep(ctx, time.Hour), context.Canceled)
	require.NoError(t, Sleep(t.Context(), time.Millisecond))
}
