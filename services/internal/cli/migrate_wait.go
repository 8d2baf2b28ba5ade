package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/switchboard/switchboard/migrations"
	"github.com/switchboard/switchboard/pkg/config"
)

// schemaPollInterval is how often `migrate wait` asks the database for its
// schema version: a cheap read (migrations.Current takes no lock), and a
// waiting pod starts at most this long after the migration commits.
const schemaPollInterval = time.Second

// waitForSchema is `migrate wait`: it returns once the database's schema is
// exactly the version this binary embeds, the one a node needs to report
// SERVING. A Kubernetes initContainer runs it so a Deployment's pods start
// only after the migration Job has finished, without RBAC to watch the Job:
// the database itself says whether the Job is done.
//
// An unreachable database or an older schema is waited out until ctx ends
// (SWITCHBOARD_STARTUP_TIMEOUT); a newer schema fails at once, since waiting
// cannot make this binary match it (an older image during a rollout).
func waitForSchema(ctx context.Context, db *sql.DB, stdout io.Writer, every, limit time.Duration) error {
	want := migrations.Latest()
	t := time.NewTicker(every)
	defer t.Stop()
	var (
		lastErr error
		have    int64 = -1
		told    bool
	)
	for {
		v, err := migrations.Current(ctx, db)
		switch {
		case err == nil && v == want:
			_, err = fmt.Fprintf(stdout, "schema at version %d\n", want)
			return err
		case err == nil && v > want:
			return fmt.Errorf("migrate wait: the database's schema is at version %d, newer than this binary's %d: run a newer image", v, want)
		case err == nil:
			have, lastErr = v, nil
		case ctx.Err() == nil: // not the deadline cutting a query short
			lastErr = err
		}
		if !told {
			told = true
			_, _ = fmt.Fprintf(stdout, "waiting for schema version %d (run `switchboard migrate up`)\n", want)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return ctx.Err()
			}
			if lastErr != nil {
				return fmt.Errorf("migrate wait: no schema version %d within %s (%s): %w", want, limit, config.EnvStartupTimeout, lastErr)
			}
			return fmt.Errorf("migrate wait: schema still at version %d after %s (%s), this binary needs %d", have, limit, config.EnvStartupTimeout, want)
		}
	}
}
