package privatepg_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest/privatepg"
)

// TestFreePortNeverRepeats: the ports one process is given are distinct,
// however often the kernel offers one again.
func TestFreePortNeverRepeats(t *testing.T) {
	t.Parallel()
	seen := map[int]bool{}
	for range 500 {
		p, err := privatepg.FreePort()
		require.NoError(t, err)
		require.False(t, seen[p], "port %d given twice", p)
		seen[p] = true
	}
}
