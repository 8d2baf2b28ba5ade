package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// env is a lookup over kv (key, value, key, value…).
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	require.Zero(t, percentile(nil, 50))

	one := []time.Duration{7}
	for _, p := range []float64{1, 50, 99, 100} {
		require.Equal(t, time.Duration(7), percentile(one, p))
	}

	// 1..100: the nearest-rank p-th percentile is p itself.
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i + 1)
	}
	for _, p := range []float64{1, 50, 95, 99, 100} {
		require.Equal(t, time.Duration(p), percentile(hundred, p), "p%v", p)
	}
	require.Equal(t, time.Duration(51), percentile(hundred, 50.5))

	// Ten values: p50 is the 5th, p95 and p99 the 10th (rank = ceil(p·n)).
	ten := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 1000}
	require.Equal(t, time.Duration(5), percentile(ten, 50))
	require.Equal(t, time.Duration(9), percentile(ten, 90))
	require.Equal(t, time.Duration(1000), percentile(ten, 95))
	require.Equal(t, time.Duration(1000), percentile(ten, 99))

	// Out-of-range p is clamped to the extremes.
	require.Equal(t, time.Duration(1), percentile(ten, 0))
	require.Equal(t, time.Duration(1000), percentile(ten, 150))
}
