package textcheck_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/textcheck"
)

func TestDNSName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"redis", "redis.internal", "a-b.c_d.example", "x1.example", strings.Repeat("a", 63) + ".io"} {
		require.True(t, textcheck.DNSName(ok), ok)
	}
	for _, bad := range []string{"", "-a.io", "a-.io", "a..io", "Redis.io", "a b.io", "10.0.0.1", "1.2.3",
		strings.Repeat("a", 64) + ".io", strings.Repeat("a.", 127) + "io"} {
		require.False(t, textcheck.DNSName(bad), bad)
	}
}
