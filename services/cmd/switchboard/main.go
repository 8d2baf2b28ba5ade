// Command switchboard is the one Switchboard binary: `serve` runs any set of
// services as a node, `migrate` manages the schema, `version` says what this is.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	// Schedules name IANA time zones; the binary carries the database so
	// that a container without /usr/share/zoneinfo resolves them alike.
	_ "time/tzdata"

	"github.com/switchboard/switchboard/services/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := cli.Run(ctx, os.Args[1:], os.Stdout, os.LookupEnv)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "switchboard:", err)
		os.Exit(cli.ExitCode(err))
	}
}
