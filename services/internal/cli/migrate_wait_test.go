//go:build integration

package cli

import (
	"bytes"
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/migrations"
	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/pgtest"
)

// syncBuffer is what waitForSchema writes to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func openDB(t *testing.T, url string) *sql.DB {
	t.Helper()
	pc, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	db := stdlib.OpenDB(*pc)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// The initContainer's wait: it holds while the schema is behind and returns
// as soon as the migration (the Job's `migrate up`) has committed.
func TestMigrateWaitReturnsOnceTheSchemaIsCurrent(t *testing.T) {
	t.Parallel()
	db := openDB(t, pgtest.NewEmptyDatabase(t))
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- waitForSchema(t.Context(), db, out, 20*time.Millisecond, time.Minute) }()

	require.Eventually(t, func() bool { return bytes.Contains([]byte(out.String()), []byte("waiting for schema version")) },
		30*time.Second, 10*time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("returned before the schema was migrated: %v", err)
	default:
	}

	_, err := migrations.Up(t.Context(), db)
	require.NoError(t, err)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("still waiting after the migration committed")
	}
	require.Contains(t, out.String(), "schema at version")
}

// A schema that never arrives ends the wait at the deadline with an error
// that says what is missing and which setting bounds it.
func TestMigrateWaitGivesUpAtTheDeadline(t *testing.T) {
	t.Parallel()
	db := openDB(t, pgtest.NewEmptyDatabase(t))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	err := waitForSchema(ctx, db, &syncBuffer{}, 20*time.Millisecond, 2*time.Second)
	require.ErrorContains(t, err, "schema still at version 0")
	require.ErrorContains(t, err, config.EnvStartupTimeout)
}

// A schema newer than the binary cannot be waited out: fail at once.
func TestMigrateWaitRefusesANewerSchema(t *testing.T) {
	t.Parallel()
	db := openDB(t, pgtest.NewDatabase(t))
	_, err := db.ExecContext(t.Context(), `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true)`, migrations.Latest()+1)
	require.NoError(t, err)
	err = waitForSchema(t.Context(), db, &syncBuffer{}, time.Hour, time.Minute)
	require.ErrorContains(t, err, "newer than this binary's")
}

// A database that cannot be reached is waited out too, and the error at the
// deadline carries the connection failure.
func TestMigrateWaitReportsAnUnreachableDatabase(t *testing.T) {
	t.Parallel()
	db := openDB(t, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	err := waitForSchema(ctx, db, &syncBuffer{}, 20*time.Millisecond, 2*time.Second)
	require.ErrorContains(t, err, "no schema version")
	require.ErrorContains(t, err, "current")
}
