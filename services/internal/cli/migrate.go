package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/switchboard/switchboard/migrations"
	"github.com/switchboard/switchboard/pkg/config"
)

// migrate runs `migrate up` (what every node also does on boot; useful as a
// Kubernetes Job before a rollout), `migrate status`, or `migrate wait`.
func migrate(ctx context.Context, args []string, stdout io.Writer, lookup func(string) (string, bool)) error {
	c := newCommand("migrate", "switchboard migrate up|status|wait", `up applies the embedded schema migrations
under goose's advisory lock (what every node also does on boot; run it as a Kubernetes Job before a
rollout); status lists them with when each was applied; wait blocks until the schema is this
binary's (a Kubernetes initContainer waiting for the migration Job), failing at once on a newer
schema and at SWITCHBOARD_STARTUP_TIMEOUT otherwise. Reads DATABASE_URL and
SWITCHBOARD_STARTUP_TIMEOUT.`)
	pos, help, err := c.parse(args, stdout)
	if help || err != nil {
		return err
	}
	if len(pos) != 1 || (pos[0] != "up" && pos[0] != "status" && pos[0] != "wait") {
		return usageErr("migrate needs one of: up, status, wait; got %q", strings.Join(pos, " "))
	}
	action := pos[0]
	cfg, err := config.Load(lookup)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	pc, err := pgx.ParseConfig(cfg.Postgres.URL)
	if err != nil {
		return fmt.Errorf("%s: cannot be parsed as a connection string", config.EnvDatabaseURL)
	}
	db := stdlib.OpenDB(*pc)
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, cfg.Postgres.StartupTimeout)
	defer cancel()

	switch action {
	case "wait":
		return waitForSchema(ctx, db, stdout, schemaPollInterval, cfg.Postgres.StartupTimeout)
	case "up":
		applied, err := migrations.Up(ctx, db)
		if err != nil {
			return fmt.Errorf("migrate up: %w", err)
		}
		_, err = fmt.Fprintf(stdout, "applied %d migration(s); schema at version %d\n", applied, migrations.Latest())
		return err
	}
	status, err := migrations.Status(ctx, db)
	if err != nil {
		return fmt.Errorf("migrate status: %w", err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "VERSION\tNAME\tAPPLIED AT")
	for _, s := range status {
		at := "pending"
		if s.Applied {
			at = s.AppliedAt.UTC().Format(time.RFC3339)
		}
		_, _ = fmt.Fprintf(tw, "%d\t%s\t%s\n", s.Version, s.Source, at)
	}
	return tw.Flush()
}
