package cli

import (
	"context"
	"errors"
	"io"

	"github.com/switchboard/switchboard/services/internal/bench"
)

// benchCmd runs `switchboard bench TARGET …` (args are the words after
// "bench"): the benchmarks themselves live in services/internal/bench; asked
// for --help, one answers with a *bench.Help, printed here.
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
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			c := newCommand("bench", "switchboard bench queue|ingest|realtime [flags]", benchAbout)
			c.flagsOf = "each target's own: switchboard bench queue --help (likewise ingest, realtime)"
			_, _, err := c.parse(args[:1], stdout)
			return err
		}
		return usageErr("bench needs a target: %s | %s | %s", bench.QueueUsage, bench.IngestUsage, bench.RealtimeUsage)
	}
	tuneGC(lookup)
	err := run(ctx, args[1:], stdout, lookup)
	var h *bench.Help
	if errors.As(err, &h) {
		return printUsage(stdout, h.Synopsis, benchAbout, h.Flags, "")
	}
	return err
}

const benchAbout = `Load generators against nodes that are already serving; progress goes to stderr and one
RESULT line to stdout. SWITCHBOARD_TOKEN is the bearer token: queue and realtime need an agent
credential (scopes agent, or agent,publisher), ingest an admin one. Run "switchboard bench TARGET
--help" for a target's flags.`
