package cli

import (
	"context"
	"io"

	"github.com/switchboard/switchboard/services/internal/bench"
)

// benchCmd runs `switchboard bench TARGET …` (args are the words after
// "bench"): the benchmarks themselves live in services/internal/bench.
func benchCmd(ctx context.Context, args []string, stdout io.Writer, lookup func(string) (string, bool)) error {
	var run func(context.Context, []string, io.Writer, func(string) (string, bool)) error
	if len(args) > 0 {
		switch args[0] {
		case "queue":
			run = bench.Queue
		case "ingest":
			run = bench.Ingest
		case "realtime":
			run = bench.Realtime
		}
	}
	if run == nil {
		return usageErr("bench needs a target: %s | %s | %s", bench.QueueUsage, bench.IngestUsage, bench.RealtimeUsage)
	}
	return run(ctx, args[1:], stdout, lookup)
}
