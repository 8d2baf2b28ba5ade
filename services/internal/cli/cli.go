// Package cli implements the switchboard command line: argument parsing and
// the serve, migrate, token, mcp and version commands; `bench` is dispatched to
// services/internal/bench. It reads configuration through pkg/config only.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/switchboard/switchboard/pkg/buildinfo"
	"github.com/switchboard/switchboard/services/internal/bench"
)

const usage = `switchboard — durable ingest, queue, registry and realtime on one Postgres

Usage:
  switchboard serve [--announce] [all | SERVICE[,SERVICE...]]
                                                   run a node (default: all)
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
  switchboard mcp [--addr 127.0.0.1:9090]          MCP server over stdio for an agent's MCP client, against a running node
                                                   (SWITCHBOARD_TOKEN: the credential; --cacert CA.pem or --tls for TLS)
  switchboard version                              print the build version
  switchboard help                                 this text

Every command answers --help with its flags.

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
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return serve(ctx, rest, stdout, lookup)
	case "migrate":
		return migrate(ctx, rest, stdout, lookup)
	case "token":
		return token(ctx, rest, stdout, lookup)
	case "bench":
		return benchCmd(ctx, rest, stdout, lookup)
	case "mcp":
		return mcpCmd(ctx, rest, os.Stdin, nopCloser{stdout}, lookup)
	case "version", "--version":
		return version(rest, stdout)
	case "help", "-h", "--help":
		_, err := io.WriteString(stdout, usage)
		return err
	default:
		return usageErr("unknown command %q", cmd)
	}
}

func version(args []string, stdout io.Writer) error {
	c := newCommand("version", "switchboard version", `Prints the build's version (git describe at
"make build"; otherwise the commit of a build from a git checkout, "-dirty" with local changes, or
"dev"), its revision and the Go version.`)
	pos, help, err := c.parse(args, stdout)
	if help || err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErr("version takes no arguments")
	}
	bi := buildinfo.Get()
	_, err = fmt.Fprintf(stdout, "switchboard %s (revision %s, %s)\n", bi.Version, orUnknown(bi.Revision), bi.GoVersion)
	return err
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// nopCloser lets the MCP server close what it writes to without closing
// the process's stdout, which is not its to close.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
