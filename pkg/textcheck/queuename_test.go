package textcheck_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/textcheck"
)

func TestQueueName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"a", "0", "hooks", "a.b_c-d", strings.Repeat("a", 63)} {
		require.True(t, textcheck.QueueName(ok), ok)
	}
	for _, bad := range []string{"", "-a", ".a", "_a", "A", "a b", "a/b", strings.Repeat("a", 64), "é"} {
		require.False(t, textcheck.QueueName(bad), bad)
	}
}
