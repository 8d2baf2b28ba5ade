package queue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/queue"
)

func TestBackoffFormula(t *testing.T) {
	t.Parallel()
	for attempt := int32(-1); attempt <= 200; attempt++ {
		full := time.Hour
		if n := max(attempt-1, 0); n < 12 {
			full = min(time.Hour, time.Second<<n)
		}
		for range 20 {
			d := queue.Backoff(attempt, time.Second, time.Hour)
			require.GreaterOrEqual(t, d, full/2, "attempt %d", attempt)
			require.Less(t, d, full, "attempt %d", attempt)
		}
	}
}
