package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/internal/bench"
)

// TestBenchDispatch: `bench` names its targets when given none or another,
// each target gets the words after its name, and the benchmarks' usage
// errors exit 2 with nothing on stdout.
func TestBenchDispatch(t *testing.T) {
	t.Parallel()
	lookup := func(k string) (string, bool) { return "t", k == bench.EnvToken }
	for name, args := range map[string][]string{
		"no target":    nil,
		"wrong target": {"events", "--todos", "1", "--workers", "1"},
	} {
		err := benchCmd(t.Context(), args, &bytes.Buffer{}, lookup)
		require.Equal(t, 2, ExitCode(err), name)
		for _, usage := range []string{bench.QueueUsage, bench.IngestUsage, bench.RealtimeUsage} {
			require.ErrorContains(t, err, usage, name)
		}
	}
	for msg, args := range map[string][]string{
		"bench queue: --todos must be at least 1":   {"queue"},
		"bench ingest: --requests must be at least": {"ingest", "--concurrency", "1"},
		"bench realtime: --subscribers":             {"realtime", "--publishers", "1"},
	} {
		var out bytes.Buffer
		err := benchCmd(t.Context(), args, &out, lookup)
		require.Equal(t, 2, ExitCode(err), msg)
		require.ErrorContains(t, err, msg)
		require.ErrorContains(t, err, "(see `switchboard help`)")
		require.Empty(t, out.String())
	}
}
