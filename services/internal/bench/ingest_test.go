package bench

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseBenchIngest(t *testing.T) {
	t.Parallel()
	lookup := env(EnvToken, "sb_tok")
	cfg, err := parseBenchIngest([]string{"--requests", "10", "--concurrency", "4"}, lookup)
	require.NoError(t, err)
	require.Equal(t, benchIngestConfig{
		url: "http://127.0.0.1:8080", token: "sb_tok", queue: "bench-ingest", requests: 10, concurrency: 4, bodyBytes: 256,
	}, cfg)
	for name, args := range map[string][]string{
		"no requests":    {"--concurrency", "1"},
		"no concurrency": {"--requests", "1"},
		"tiny body":      {"--requests", "1", "--concurrency", "1", "--body-bytes", "8"},
		"bad url":        {"--requests", "1", "--concurrency", "1", "--url", "127.0.0.1:8080"},
		"bad queue":      {"--requests", "1", "--concurrency", "1", "--queue", "Bad"},
		"extra":          {"--requests", "1", "--concurrency", "1", "more"},
	} {
		_, err := parseBenchIngest(args, lookup)
		var ue *UsageError
		require.ErrorAs(t, err, &ue, name)
	}
	_, err = parseBenchIngest([]string{"--requests", "1", "--concurrency", "1"}, env())
	require.ErrorContains(t, err, EnvToken)
}
