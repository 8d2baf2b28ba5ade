// Package postgres opens the node's connection pool, applies the embedded
// migrations under goose's advisory lock, and watches readiness (database
// reachable and schema at the version this binary needs).
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/migrations"
)

// WaitReachable pings pool, retrying with backoff, until the database
// answers or ctx is done. Giving up, it reports the last failure that was
// the database's (refused, bad certificate, wrong password), not only the
// deadline that cut the final attempt short: on a slow machine that last
// attempt is often the one the deadline ends, and "context deadline
// exceeded" alone does not tell an operator what to fix.
func WaitReachable(ctx context.Context, log *zap.Logger, pool *pgxpool.Pool) error {
	backoff := 100 * time.Millisecond
	var cause error // the last failure not caused by ctx ending
	for attempt := 1; ; attempt++ {
		err := pool.Ping(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return unreachable(err, cause)
		}
		cause = err
		if attempt == 1 || attempt%10 == 0 {
			log.Warn("waiting for postgres", zap.Int("attempt", attempt), zap.Error(err))
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return unreachable(err, cause)
		case <-t.C:
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

// unreachable is WaitReachable's error: the final attempt's, and the last
// real failure when the deadline cut that attempt short.
func unreachable(final, cause error) error {
	if cause == nil || cause == final { //nolint:errorlint // the same error value, not a match
		return fmt.Errorf("postgres not reachable: %w", final)
	}
	return fmt.Errorf("postgres not reachable: %w (then, retrying: %v)", cause, final) //nolint:errorlint // one cause is wrapped
}

// Migrate applies pending migrations over a database/sql handle borrowed from
// pool's configuration. Many nodes may call it at once: goose's advisory lock
// lets one apply while the others wait and then find nothing to do.
func Migrate(ctx context.Context, pool *pgxpool.Pool) (applied int, err error) {
	db := OpenDB(pool)
	defer db.Close()
	return migrations.Up(ctx, db)
}

// OpenDB returns a database/sql handle (goose needs one) that borrows
// connections from pool instead of dialing its own. The caller closes it,
// which leaves the pool open.
func OpenDB(pool *pgxpool.Pool) *sql.DB {
	return stdlib.OpenDBFromPool(pool)
}

// ErrSchemaMismatch means the database answers but its schema is not the
// version this binary was built for: serving would fail request by request.
var ErrSchemaMismatch = errors.New("schema version mismatch")

// SchemaCurrent reports nil when the database answers and its schema version
// is the one embedded in this binary, an error wrapping ErrSchemaMismatch when
// it answers with another version, and any other error when it cannot be asked.
func SchemaCurrent(ctx context.Context, pool *pgxpool.Pool) error {
	db := OpenDB(pool)
	defer db.Close()
	v, err := migrations.Current(ctx, db)
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if want := migrations.Latest(); v != want {
		return fmt.Errorf("%w: schema version %d, this binary needs %d", ErrSchemaMismatch, v, want)
	}
	return nil
}
