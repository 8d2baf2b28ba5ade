//go:build integration

package migrations_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/migrations"
)

// defaultServerURL is the local development server (deploy/local); CI points
// TEST_DATABASE_URL at its own. Any database on the server will do: the tests
// only use it to create and drop their own databases.
const defaultServerURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// newDatabase creates an empty database for one test on the server at
// TEST_DATABASE_URL (a URL, not a keyword/value string), drops it when the
// test ends, and returns a URL for it.
func newDatabase(t *testing.T) string {
	t.Helper()
	serverURL := os.Getenv("TEST_DATABASE_URL")
	if serverURL == "" {
		serverURL = defaultServerURL
	}
	u, err := url.Parse(serverURL)
	require.NoError(t, err, "TEST_DATABASE_URL must be a postgres:// URL")

	suffix := make([]byte, 6)
	_, err = rand.Read(suffix)
	require.NoError(t, err)
	name := "migrations_test_" + hex.EncodeToString(suffix)

	admin, err := sql.Open("pgx", serverURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close() })

	// The name is generated above from hex digits, so it is safe to splice
	// into DDL, which cannot take parameters.
	_, err = admin.ExecContext(t.Context(), "CREATE DATABASE "+name)
	require.NoError(t, err)
	t.Cleanup(func() {
		// t.Context() is already cancelled when cleanups run. FORCE ends any
		// session a failed test left behind.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})

	u.Path = "/" + name
	return u.String()
}

// open returns a *sql.DB for dbURL that is closed when the test ends (before
// the database is dropped: cleanups run last-registered first).
func open(t *testing.T, dbURL string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// migrated returns a fresh database with every migration applied.
func migrated(t *testing.T) *sql.DB {
	t.Helper()
	db := open(t, newDatabase(t))
	_, err := migrations.Up(t.Context(), db)
	require.NoError(t, err)
	return db
}

// insertHuman inserts a tenant and returns its id.
func insertHuman(t *testing.T, db *sql.DB) string {
	t.Helper()
	var id string
	err := db.QueryRowContext(t.Context(),
		`INSERT INTO humans (email) VALUES ('ann@example.com') RETURNING id`).Scan(&id)
	require.NoError(t, err)
	return id
}

func TestUpIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := open(t, newDatabase(t))

	// A database goose has never touched has no version table: 0, no error.
	current, err := migrations.Current(ctx, db)
	require.NoError(t, err)
	require.Zero(t, current)

	before, err := migrations.Status(ctx, db)
	require.NoError(t, err)
	require.NotEmpty(t, before)
	for _, s := range before {
		require.False(t, s.Applied, s.Source)
		require.True(t, s.AppliedAt.IsZero(), s.Source)
	}
	require.Equal(t, migrations.Latest(), before[len(before)-1].Version)

	applied, err := migrations.Up(ctx, db)
	require.NoError(t, err)
	require.Equal(t, len(before), applied)

	applied, err = migrations.Up(ctx, db)
	require.NoError(t, err)
	require.Zero(t, applied, "a second Up must find nothing to do")

	current, err = migrations.Current(ctx, db)
	require.NoError(t, err)
	require.Equal(t, migrations.Latest(), current)

	after, err := migrations.Status(ctx, db)
	require.NoError(t, err)
	require.Len(t, after, len(before))
	for _, s := range after {
		require.True(t, s.Applied, s.Source)
		require.False(t, s.AppliedAt.IsZero(), s.Source)
	}
}

func TestUpConcurrentBoot(t *testing.T) {
	t.Parallel()
	const nodes = 4
	dbURL := newDatabase(t)

	// Each "node" has its own pool, as separate processes would.
	dbs := make([]*sql.DB, nodes)
	for i := range dbs {
		dbs[i] = open(t, dbURL)
		require.NoError(t, dbs[i].PingContext(t.Context()))
	}

	var (
		start   = make(chan struct{})
		wg      sync.WaitGroup
		applied = make([]int, nodes)
		errs    = make([]error, nodes)
	)
	for i := range nodes {
		wg.Go(func() {
			<-start
			applied[i], errs[i] = migrations.Up(t.Context(), dbs[i])
		})
	}
	close(start)
	wg.Wait()

	winners := 0
	for i := range nodes {
		require.NoError(t, errs[i], "node %d", i)
		if applied[i] > 0 {
			winners++
			require.Equal(t, migrations.Count(), applied[i], "the winner applies everything")
		}
	}
	require.Equal(t, 1, winners, "applied per node: %v", applied)

	current, err := migrations.Current(t.Context(), dbs[0])
	require.NoError(t, err)
	require.Equal(t, migrations.Latest(), current)
}

func TestTodoChecks(t *testing.T) {
	t.Parallel()
	db := migrated(t)
	humanID := insertHuman(t, db)

	// A valid row first, so the failures below are down to the one bad
	// column each case sets and not to the base row.
	_, err := db.ExecContext(t.Context(),
		`INSERT INTO todos (human_id, queue) VALUES ($1, 'default')`, humanID)
	require.NoError(t, err)

	cases := []struct {
		name       string
		sql        string
		constraint string
	}{
		{
			name:       "invalid state",
			sql:        `INSERT INTO todos (human_id, queue, state) VALUES ($1, 'default', 'waiting')`,
			constraint: "todos_state_check",
		},
		{
			name:       "max_attempts zero",
			sql:        `INSERT INTO todos (human_id, queue, max_attempts) VALUES ($1, 'default', 0)`,
			constraint: "todos_max_attempts_check",
		},
		{
			name:       "attempt above max_attempts",
			sql:        `INSERT INTO todos (human_id, queue, attempt, max_attempts) VALUES ($1, 'default', 3, 2)`,
			constraint: "todos_attempt_max_check",
		},
		{
			name:       "running without lease",
			sql:        `INSERT INTO todos (human_id, queue, state, attempt) VALUES ($1, 'default', 'running', 1)`,
			constraint: "todos_lease_check",
		},
		{
			name: "lease on a pending todo",
			sql: `INSERT INTO todos (human_id, queue, lease_owner, lease_expires_at)
			      VALUES ($1, 'default', 'w1', now())`,
			constraint: "todos_lease_check",
		},
		{
			name:       "bad queue name",
			sql:        `INSERT INTO todos (human_id, queue) VALUES ($1, 'Bad Queue')`,
			constraint: "queue_name_check", // the domain queue_name (00009)
		},
		{
			name:       "bad queue name on update",
			sql:        `UPDATE todos SET queue = 'Bad Queue' WHERE human_id = $1`,
			constraint: "queue_name_check",
		},
		{
			name:       "priority 7",
			sql:        `INSERT INTO todos (human_id, queue, priority) VALUES ($1, 'default', 7)`,
			constraint: "todos_priority_check",
		},
		{
			name:       "completed without finished_at",
			sql:        `INSERT INTO todos (human_id, queue, state) VALUES ($1, 'default', 'completed')`,
			constraint: "todos_finished_at_check",
		},
		{
			name:       "negative lease_expiries",
			sql:        `INSERT INTO todos (human_id, queue, lease_expiries) VALUES ($1, 'default', -1)`,
			constraint: "todos_lease_expiries_check",
		},
		{
			name:       "result not an object",
			sql:        `INSERT INTO todos (human_id, queue, result) VALUES ($1, 'default', '[1]')`,
			constraint: "todos_result_check",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := db.ExecContext(t.Context(), tc.sql, humanID)
			var pgErr *pgconn.PgError
			require.ErrorAs(t, err, &pgErr)
			require.Equal(t, "23514", pgErr.Code, "check_violation expected, got: %v", pgErr)
			require.Equal(t, tc.constraint, pgErr.ConstraintName)
		})
	}
}

func TestNodeRegistryIsUnlogged(t *testing.T) {
	t.Parallel()
	db := migrated(t)

	var persistence string
	err := db.QueryRowContext(t.Context(),
		`SELECT relpersistence FROM pg_class WHERE oid = 'node_registry'::regclass`).Scan(&persistence)
	require.NoError(t, err)
	require.Equal(t, "u", persistence)
}

func TestSettingsSeeded(t *testing.T) {
	t.Parallel()
	db := migrated(t)

	rows, err := db.QueryContext(t.Context(), `SELECT key, value FROM settings`)
	require.NoError(t, err)
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var key, value string
		require.NoError(t, rows.Scan(&key, &value))
		got[key] = value
	}
	require.NoError(t, rows.Err())

	want := map[string]string{
		"retention.events":          `{"max_age_seconds": 2592000, "max_rows": 10000000, "max_rows_per_tenant": 1000000}`,
		"retention.todos":           `{"max_age_seconds": 604800, "max_rows": 10000000, "max_rows_per_tenant": 1000000}`,
		"retention.realtime_events": `{"max_age_seconds": 86400, "max_rows": 1000000, "max_rows_per_tenant": 100000}`,
		"queue.defaults":            `{"max_attempts": 25, "lease_seconds": 30}`,
		"ingest.dedup":              `{"window_seconds": 259200}`,
		"ingest.limits":             `{"tenant_requests_per_second": 1000}`,
		"streams.limits":            `{"max_per_credential": 100, "max_per_tenant": 1000}`,
		"auth.credentials":          `{"max_ttl_seconds": 31536000}`,
		"retention.event_payloads":  `{"max_age_seconds": 0}`,
		"tenant.limits":             `{"max_agents": 1000, "max_credentials": 10000, "max_endpoints": 1000, "max_adapters": 10, "max_schedules": 1000}`,
		"realtime.limits":           `{"tenant_durable_per_second": 1000, "tenant_ephemeral_per_second": 10000}`,
		"queue.schedules":           `{"min_interval_seconds": 10}`,
	}
	require.Len(t, got, len(want))
	for key, value := range want {
		require.Contains(t, got, key)
		require.JSONEq(t, value, got[key], key)
	}
}

func TestEventsDedup(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := migrated(t)
	humanID := insertHuman(t, db)

	// The statement the ingest service runs: an empty RETURNING means the
	// delivery is already stored.
	const insert = `
		INSERT INTO events (human_id, source, delivery_id, payload, size_bytes)
		VALUES ($1, $2, $3, '\x7b7d', 2)
		ON CONFLICT (human_id, source, delivery_id) WHERE delivery_id IS NOT NULL DO NOTHING
		RETURNING id`
	store := func(source string, deliveryID *string) (int64, error) {
		var id int64
		err := db.QueryRowContext(ctx, insert, humanID, source, deliveryID).Scan(&id)
		return id, err
	}
	deliveryID := "delivery-1"

	first, err := store("publish", &deliveryID)
	require.NoError(t, err)
	require.NotZero(t, first)

	_, err = store("publish", &deliveryID)
	require.ErrorIs(t, err, sql.ErrNoRows, "a redelivery must return no row")

	// The dedup scope is (human, source): another source may reuse the id.
	_, err = store("adapter:00000000-0000-0000-0000-000000000001", &deliveryID)
	require.NoError(t, err)

	// Events without a delivery id are never deduplicated.
	_, err = store("publish", nil)
	require.NoError(t, err)
	_, err = store("publish", nil)
	require.NoError(t, err)

	var count int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&count))
	require.Equal(t, 4, count)
}

func TestTodoIndexes(t *testing.T) {
	t.Parallel()
	db := migrated(t)

	t.Run("idx_todos_pending is partial over pending work", func(t *testing.T) {
		t.Parallel()
		var def string
		var predicate sql.NullString
		err := db.QueryRowContext(t.Context(), `
			SELECT pg_get_indexdef(i.indexrelid), pg_get_expr(i.indpred, i.indrelid)
			FROM pg_index AS i
			WHERE i.indexrelid = 'idx_todos_pending'::regclass`).Scan(&def, &predicate)
		require.NoError(t, err)
		require.True(t, predicate.Valid, "idx_todos_pending must be partial: %s", def)
		require.Equal(t, "(state = 'pending'::text)", predicate.String)
		require.Contains(t, def, "ON public.todos USING btree (human_id, queue, priority, run_at, id)")
	})

	// Heartbeats only touch the lease columns; they stay HOT updates only
	// while no index (key, expression or predicate) mentions those columns.
	t.Run("lease columns are in no index", func(t *testing.T) {
		t.Parallel()
		rows, err := db.QueryContext(t.Context(), `
			SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid)
			FROM pg_index
			WHERE indrelid = 'todos'::regclass`)
		require.NoError(t, err)
		defer rows.Close()
		n := 0
		for rows.Next() {
			var name, def string
			require.NoError(t, rows.Scan(&name, &def))
			require.NotContains(t, def, "lease_", name)
			n++
		}
		require.NoError(t, rows.Err())
		require.Equal(t, 9, n, "pkey, pending, pending_key, running, dedup, list, finished_at, finished_tenant, event_id")
	})

	t.Run("todos leaves room for in-page updates", func(t *testing.T) {
		t.Parallel()
		var ok bool
		err := db.QueryRowContext(t.Context(),
			`SELECT 'fillfactor=80' = ANY (reloptions) FROM pg_class WHERE oid = 'todos'::regclass`).Scan(&ok)
		require.NoError(t, err)
		require.True(t, ok, "todos must have fillfactor=80")
	})
}

func TestDownToZeroAndUpAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := migrated(t)
	// Rows in every table that references another, so the Down order has to
	// respect the foreign keys.
	humanID := insertHuman(t, db)
	_, err := db.ExecContext(ctx, `
		WITH e AS (
			INSERT INTO events (human_id, source, payload, size_bytes) VALUES ($1, 'publish', '\x00', 1) RETURNING id
		)
		INSERT INTO todos (human_id, queue, event_id) SELECT $1, 'default', id FROM e`, humanID)
	require.NoError(t, err)

	reverted, err := migrations.DownTo(ctx, db, 0)
	require.NoError(t, err)
	require.Equal(t, migrations.Count(), reverted)

	current, err := migrations.Current(ctx, db)
	require.NoError(t, err)
	require.Zero(t, current)

	// Tables, sequences, views and types: everything but goose's own table
	// (and its id sequence and row type).
	var leftovers sql.NullString
	err = db.QueryRowContext(ctx, `
		SELECT string_agg(c.relname, ', ' ORDER BY c.relname)
		FROM pg_class AS c
		WHERE c.relnamespace = 'public'::regnamespace
		  AND c.relname NOT LIKE 'goose\_db\_version%'`).Scan(&leftovers)
	require.NoError(t, err)
	require.False(t, leftovers.Valid, "Down must drop everything Up created: %s", leftovers.String)

	applied, err := migrations.Up(ctx, db)
	require.NoError(t, err)
	require.Equal(t, migrations.Count(), applied)
}
