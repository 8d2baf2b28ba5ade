package cli

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

//nolint:paralleltest // changes the process-wide GC target
func TestTuneGC(t *testing.T) {
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })

	tuneGC(func(string) (string, bool) { return "", false })
	require.Equal(t, defaultGCPercent, debug.SetGCPercent(100), "no GOGC: the default applies")

	tuneGC(func(k string) (string, bool) { return "50", k == "GOGC" })
	require.Equal(t, 100, debug.SetGCPercent(100), "GOGC set: left to the runtime")
}
