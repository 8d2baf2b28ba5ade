// Package migrations holds Switchboard's database schema as goose SQL
// migrations embedded in the binary, and applies them.
//
// Every node calls [Up] on boot (and `switchboard migrate` does the same for a
// Kubernetes Job). Up holds a Postgres session-level advisory lock while it
// works, so any number of nodes may boot at once against the same database:
// one applies the pending migrations, the others wait for the lock and then
// find nothing left to do.
//
// The migrations are plain SQL files named NNNNN_topic.sql in this directory;
// docs/data-model.md is the design they implement. sqlc reads the same files
// (sqlc.yaml: schema: migrations) to type-check every service's queries.
//
// The caller owns the *sql.DB, typically opened with the pgx stdlib driver:
//
//	import _ "github.com/jackc/pgx/v5/stdlib"
//	db, err := sql.Open("pgx", databaseURL)
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed *.sql
var files embed.FS

// versionTable is goose's bookkeeping table (goose's default name).
const versionTable = goose.DefaultTablename

// Lock polling: try the advisory lock every second, for up to 300 tries.
// A waiting node sees the lock free at most 1 s after the migrating node is
// done. Five minutes bounds a boot stuck behind a slow migration; the caller
// can still cancel sooner through ctx.
const (
	lockPollSeconds = 1
	lockPollTries   = 300
)

// MigrationStatus describes one embedded migration and whether the database
// has it.
type MigrationStatus struct {
	// Version is the numeric prefix of the file name (5 for 00005_realtime.sql).
	Version int64
	// Source is the file name, e.g. "00005_realtime.sql".
	Source string
	// Applied reports whether the database has recorded this migration.
	Applied bool
	// AppliedAt is when it was applied (the database's clock); zero when
	// Applied is false.
	AppliedAt time.Time
}

// newProvider builds the goose provider every function in this package uses.
func newProvider(db *sql.DB) (*goose.Provider, error) {
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(lockPollSeconds, lockPollTries))
	if err != nil {
		return nil, fmt.Errorf("migrations: create session locker: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, files,
		goose.WithSessionLocker(locker),
		// Only the embedded files: ignore Go migrations that any other
		// package in the binary may have registered with goose's globals.
		goose.WithDisableGlobalRegistry(true),
		// Not verbose (the default) is already silent; the explicit false
		// documents that this package never writes to stdout.
		goose.WithVerbose(false),
	)
	if err != nil {
		return nil, fmt.Errorf("migrations: create goose provider: %w", err)
	}
	return p, nil
}

// Up applies every pending migration, each in its own transaction, and returns
// how many it applied (0 when the database was already current, including
// when another node applied them while this one waited for the lock).
//
// On failure the returned count is the number applied before the failing
// one; those stay applied.
func Up(ctx context.Context, db *sql.DB) (applied int, err error) {
	p, err := newProvider(db)
	if err != nil {
		return 0, err
	}
	results, err := p.Up(ctx)
	if err != nil {
		if partial, ok := errors.AsType[*goose.PartialError](err); ok {
			return len(partial.Applied), fmt.Errorf("migrations: up: %w", err)
		}
		return 0, fmt.Errorf("migrations: up: %w", err)
	}
	return len(results), nil
}

// Status lists every embedded migration in version order with whether the
// database has applied it.
//
// Like Up, it takes the migration lock, so it waits for a migration that is
// in progress on another node and then reports its result. It creates goose's
// bookkeeping table if the database has never been migrated.
func Status(ctx context.Context, db *sql.DB) ([]MigrationStatus, error) {
	p, err := newProvider(db)
	if err != nil {
		return nil, err
	}
	statuses, err := p.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrations: status: %w", err)
	}
	out := make([]MigrationStatus, 0, len(statuses))
	for _, s := range statuses {
		out = append(out, MigrationStatus{
			Version:   s.Source.Version,
			Source:    s.Source.Path,
			Applied:   s.State == goose.StateApplied,
			AppliedAt: s.AppliedAt,
		})
	}
	return out, nil
}

// Latest returns the highest embedded migration version: the version a fully
// migrated database reports from [Current].
func Latest() int64 {
	// Same rule goose applies when it collects sources: a file counts if its
	// name starts with a positive number and an underscore. The glob pattern
	// is a valid constant, so fs.Glob cannot fail.
	names, _ := fs.Glob(files, "*.sql")
	var latest int64
	for _, name := range names {
		if v, err := goose.NumericComponent(name); err == nil {
			latest = max(latest, v)
		}
	}
	return latest
}

// Current returns the database's schema version: the highest applied
// migration, or 0 when the database has never been migrated.
//
// It is read-only and takes no lock, so it is cheap enough for readiness
// checks and never waits behind a migration in progress (it reports the
// version committed so far).
func Current(ctx context.Context, db *sql.DB) (int64, error) {
	var exists bool
	// to_regclass resolves the name through search_path exactly as goose
	// does, and returns NULL instead of failing when there is no such table.
	err := db.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, versionTable).Scan(&exists)
	if err != nil {
		return 0, fmt.Errorf("migrations: current: look up %s: %w", versionTable, err)
	}
	if !exists {
		return 0, nil
	}
	var version int64
	// The table name is a package constant, not input. Version 0 is goose's
	// own marker row, so an initialised but unmigrated database reports 0.
	err = db.QueryRowContext(ctx, `SELECT coalesce(max(version_id), 0) FROM `+versionTable).Scan(&version)
	if err != nil {
		return 0, fmt.Errorf("migrations: current: read %s: %w", versionTable, err)
	}
	return version, nil
}
