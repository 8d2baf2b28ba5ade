// Package cli implements the switchboard command line: argument parsing and
// the serve, migrate, token and version commands; `bench` is dispatched to
// services/internal/bench. It reads configuration through pkg/config only.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/switchboard/switchboard/pkg/buildinfo"
	"github.com/switchboard/switchboard/services/internal/bench"
)

const usage = `switchboard — durable ingest, queue, registry and realtime on one Postgres

Usage:
  switchboard serve [all | SERVICE[,SERVICE...]]   run a node (default: all)
  switchboard migrate up|status|wait               apply, list or wait for schema migrations
  switchboard token create --admin [--email E]     mint an administrator credential (printed once)
  switchboard token generate                       print a fresh token (for SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN)
  switchboard bench queue --todos N --workers W    queue benchmark against a running server
                                                   (SWITCHBOARD_TOKEN: an agent credential with scopes agent,publisher)
  switchboard bench ingest --requests N --concurrency C
                                                   signed webhook deliveries against a running server (SWITCHBOARD_TOKEN: an admin)
  switchboard bench realtime --publishers P --subscribers S --rate R [--addrs A,B,C] [--ephemeral]
                                                   publish→deliver latency and fan-out across nodes (SWITCHBOARD_TOKEN: agent,publisher)
                                                   every bench takes --cacert CA.pem (or --tls) for nodes serving TLS
  switchboard version                              print the build version
  switchboard help                                 this text

Services: registry, queue, ingest, realtime, admin, gateway.
Configuration is read from environment variables; see the README.
`

// UsageError is a mistake in the command line (exit code 2).
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

func usageErr(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...) + " (see `switchboard help`)"}
}

// ExitCode maps an error from Run to the process exit status: 2 for usage
// mistakes (the benchmarks' included), 1 for everything else.
func ExitCode(err error) int {
	var u *UsageError
	var b *bench.UsageError
	if errors.As(err, &u) || errors.As(err, &b) {
		return 2
	}
	return 1
}

// Run executes one command. lookup reads environment variables.
func Run(ctx context.Context, args []string, stdout io.Writer, lookup func(string) (string, bool)) error {
	if len(args) == 0 {
		_, _ = io.WriteString(stdout, usage)
		return usageErr("no command given")
	}
	switch args[0] {
	case "serve":
		if len(args) > 2 {
			return usageErr("serve takes one argument, got %q", strings.Join(args[1:], " "))
		}
		spec := "all"
		if len(args) == 2 {
			spec = args[1]
		}
		tuneGC(lookup)
		return serve(ctx, spec, lookup)
	case "migrate":
		if len(args) != 2 {
			return usageErr("migrate needs one of: up, status, wait")
		}
		return migrate(ctx, args[1], stdout, lookup)
	case "token":
		return token(ctx, args[1:], stdout, lookup)
	case "bench":
		tuneGC(lookup)
		return benchCmd(ctx, args[1:], stdout, lookup)
	case "version", "--version":
		bi := buildinfo.Get()
		_, err := fmt.Fprintf(stdout, "switchboard %s (revision %s, %s)\n", bi.Version, orUnknown(bi.Revision), bi.GoVersion)
		return err
	case "help", "-h", "--help":
		_, err := io.WriteString(stdout, usage)
		return err
	default:
		return usageErr("unknown command %q", args[0])
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
