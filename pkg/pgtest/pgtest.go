//go:build integration || e2e

// Package pgtest gives each test its own real PostgreSQL database, cloned
// from a template that is migrated once per schema version, so tests run in
// parallel (across packages too) without sharing rows, and explains the
// generic plans of the queries a test ran (plans.go), so a test can pin which
// index a statement reads.
//
// The server is TEST_DATABASE_URL (default: the local trust-auth server at
// 127.0.0.1:5432 as user postgres); make's test tiers set it to the test
// cluster of `deploy/local/postgres.sh test`. Cloning a migrated template takes tens of
// milliseconds; migrating from scratch per test would take seconds. A
// test's database is dropped after it: in the background when the package's
// TestMain wraps its tests in Tests (janitor.go), else in its cleanup.
//
// Every file carries the build tags integration || e2e: a test that imports
// pgtest needs Postgres, so it cannot compile in the unit tier (`make unit`)
// by accident; it belongs in a file tagged integration (in-process) or e2e
// (services/internal/e2e, which starts the binary) too.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/switchboard/switchboard/migrations"
	"github.com/switchboard/switchboard/pkg/postgres"
)

// DefaultURL is used when TEST_DATABASE_URL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// templateLockKey serialises template creation across concurrent test
// processes (go test runs packages in parallel).
const templateLockKey = 0x5b7e_57_01

var tmpl struct {
	once     sync.Once
	name     string
	strategy string // CREATE DATABASE's STRATEGY for clones (cloneStrategy)
	err      error
}

// AdminURL is the server's maintenance database URL used to create and drop
// test databases.
func AdminURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// NewDatabase creates a database cloned from the migrated template and
// returns its URL. It is dropped when the test ends.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	name, strategy, err := template()
	if err != nil {
		tb.Fatalf("pgtest: prepare template: %v", err)
	}
	return create(tb, "TEMPLATE "+pgx.Identifier{name}.Sanitize()+" STRATEGY "+strategy)
}

// NewEmptyDatabase creates an empty database (no migrations applied), for
// tests of migration itself. It is dropped when the test ends.
func NewEmptyDatabase(tb testing.TB) string {
	tb.Helper()
	return create(tb, "")
}

// NewPool returns a pool on a fresh migrated database, closed at cleanup.
func NewPool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	return OpenPool(tb, NewDatabase(tb), nil)
}

// PoolConns is the size of a pool OpenPool and NewPool open, unless
// configure sets another. pgxpool's default is the CPU count: on a big
// machine, times the tests go test runs at once (make test bounds those with
// -p and -parallel), that outgrows what a shared server has left of its
// max_connections. Four serve a test's concurrent statements; a test that
// needs more for contention says so with MaxConns in configure.
const PoolConns = 4

// NodePoolConns is the size of each of the pools of a node under test (its
// DATABASE_URL from NodeURL). A node sizes its pools for hundreds of workers
// (services/node: at least 16 and 8 connections); two of those per parallel
// test, next to another package's tests, took a run to 82 connections, more
// than a shared server with max_connections=100 had left. A node under test
// serves a handful of clients, and pgxpool queues a statement for a free
// connection rather than fail it. Measured with 40 connections held
// (deploy/local/hold-connections.sh): 6 still overran the server when
// services/node and services/queue ran together; with 4 the integration
// tier peaked at 49 of its own and passed.
const NodePoolConns = 4

// NodeURL returns url with pool_max_conns=NodePoolConns unless url sets it,
// for the DATABASE_URL of a node a test runs (node.New, `switchboard serve`).
// Only pgxpool understands the parameter: pgx.Connect, database/sql and
// `switchboard migrate` would pass it to the server, which refuses it.
func NodeURL(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		panic(fmt.Sprintf("pgtest: not a URL: %v", err))
	}
	q := u.Query()
	if q.Has("pool_max_conns") {
		return dbURL
	}
	q.Set("pool_max_conns", strconv.Itoa(NodePoolConns))
	u.RawQuery = q.Encode()
	return u.String()
}

// OpenPool opens a pool on url configured like a node's (postgres.ConfigurePool),
// of PoolConns connections unless configure (when not nil) adjusts it, and
// closes it at cleanup, before the database of url is dropped.
func OpenPool(tb testing.TB, url string, configure func(*pgxpool.Config)) *pgxpool.Pool {
	tb.Helper()
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		tb.Fatalf("pgtest: parse %s: %v", redact(url), err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		pc.MaxConns = PoolConns
	}
	// Named after the test, so pg_stat_activity says whose connections a
	// crowded server holds (Postgres keeps the first 63 bytes).
	if pc.ConnConfig.RuntimeParams["application_name"] == "" {
		pc.ConnConfig.RuntimeParams["application_name"] = "pgtest " + tb.Name()
	}
	if configure != nil {
		configure(pc)
	}
	postgres.ConfigurePool(pc)
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		tb.Fatalf("pgtest: open pool: %v", err)
	}
	tb.Cleanup(pool.Close) // runs before the drop registered by NewDatabase
	return pool
}

func create(tb testing.TB, clause string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := databaseName()
	err := withAdmin(ctx, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" "+clause)
		return err
	})
	if err != nil {
		tb.Fatalf("pgtest: create database on %s (set TEST_DATABASE_URL): %v", redact(AdminURL()), err)
	}
	tb.Cleanup(func() { drop(tb, name) })
	return withDatabase(AdminURL(), name)
}

// drop hands the database name to the janitor (Tests) or, when none runs,
// drops it now.
func drop(tb testing.TB, name string) {
	if janitor.enqueue(name) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := withAdmin(ctx, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, dropStatement(name))
		return err
	})
	if err != nil {
		tb.Errorf("pgtest: drop database %s: %v", name, err)
	}
}

// dropStatement drops database name, ending whatever sessions still use it
// (a pool a test leaked, a node that is still stopping).
func dropStatement(name string) string {
	return "DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize() + " WITH (FORCE)"
}

// admin is the test process's one session on the maintenance database,
// which every create and drop shares. A new session is not free: measured
// on the 2-core CI machine (pgbench -C), each cost the server ~30 ms of CPU,
// and a session per create and per drop came to ~900 a run of the
// integration tier. Creates and drops take turns on it; a test waits
// milliseconds for another's.
var admin struct {
	mu   sync.Mutex
	conn *pgx.Conn
}

// withAdmin runs fn on the shared admin session, (re)connecting when there
// is none or the last one ended (a cancelled statement closes a pgx
// connection; a server restart ends it). A statement that failed because the
// session was already dead runs once more on a new one.
func withAdmin(ctx context.Context, fn func(*pgx.Conn) error) error {
	admin.mu.Lock()
	defer admin.mu.Unlock()
	for attempt := 0; ; attempt++ {
		fresh := admin.conn == nil || admin.conn.IsClosed()
		if fresh {
			conn, err := connectAdmin(ctx)
			if err != nil {
				return err
			}
			admin.conn = conn
		}
		err := fn(admin.conn)
		if err == nil || fresh || attempt > 0 || !admin.conn.IsClosed() {
			return err
		}
	}
}

// connectAdmin connects to the maintenance database, waiting while the
// server has no connection slot free (SQLSTATE 53300) until ctx ends. On a
// server shared with other clients and test processes a full server is a
// moment, not an answer: creating and dropping a test's database only needs
// a slot for milliseconds, and a drop that gave up left the database behind.
func connectAdmin(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(AdminURL())
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = "pgtest admin"
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		conn, err := pgx.ConnectConfig(ctx, cfg)
		var pe *pgconn.PgError
		// 53300: too_many_connections.
		if err == nil || !errors.As(err, &pe) || pe.Code != "53300" {
			return conn, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
	}
}

// template returns the name of the migrated template for the embedded schema,
// building it once per schema version for the whole machine, and the
// strategy to clone it with.
func template() (name, strategy string, err error) {
	tmpl.once.Do(func() { tmpl.name, tmpl.strategy, tmpl.err = buildTemplate() })
	return tmpl.name, tmpl.strategy, tmpl.err
}

// cloneStrategy picks how CREATE DATABASE copies the template, from the
// server's fsync setting. PostgreSQL 15's default, WAL_LOG, writes every
// block of the template into the WAL: right on a server whose WAL matters,
// and ~2.5 s of CPU per 20 clones on the 2-core CI machine. FILE_COPY copies
// the files and then checkpoints, which costs little where fsync is off (the
// test cluster deploy/local/postgres.sh starts: it holds nothing to
// recover) and stalls every other client where it is on.
func cloneStrategy(fsync string) string {
	if fsync == "off" {
		return "FILE_COPY"
	}
	return "WAL_LOG"
}

func buildTemplate() (name, strategy string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := connectAdmin(ctx)
	if err != nil {
		return "", "", fmt.Errorf("connect to %s (set TEST_DATABASE_URL): %w", redact(AdminURL()), err)
	}
	defer conn.Close(ctx)
	var fsync string
	if err := conn.QueryRow(ctx, "SHOW fsync").Scan(&fsync); err != nil {
		return "", "", err
	}
	name, err = migratedTemplate(ctx, conn)
	return name, cloneStrategy(fsync), err
}

// migratedTemplate returns the migrated template's name, creating it when
// no process on the server has yet.
func migratedTemplate(ctx context.Context, conn *pgx.Conn) (string, error) {
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLockKey); err != nil {
		return "", err
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", templateLockKey) //nolint:errcheck // session ends anyway

	name := "sbtpl_" + migrations.Fingerprint()[:16]
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, pruneAndStamp(ctx, conn, name)
	}
	// Build under a scratch name and rename when complete, so a run that dies
	// half-way never leaves a half-migrated template behind.
	building := name + "_" + randomHex(4)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{building}.Sanitize()); err != nil {
		return "", err
	}
	if err := migrate(ctx, withDatabase(AdminURL(), building)); err != nil {
		_, _ = conn.Exec(ctx, dropStatement(building))
		return "", fmt.Errorf("migrate template: %w", err)
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{building}.Sanitize()+" RENAME TO "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return name, pruneAndStamp(ctx, conn, name)
}

// templateIdle is how long a template of another schema version may go
// unused before a process drops it. Another checkout on the same server (a
// branch, a worktree, a second CI job) is still cloning its own template:
// dropping every other version as soon as a new one was built failed those
// runs half way.
const templateIdle = 24 * time.Hour

// stampPrefix starts a template's comment, which records when a test process
// last used it.
const stampPrefix = "pgtest template, last used "

// pruneAndStamp records that name is in use now and drops the templates (and
// scratch builds of dead runs) no process has used for templateIdle. A
// template without a stamp (made by an older pgtest) is stamped instead, so
// it too lives templateIdle past its last use. The caller holds the template
// lock, so stamps never race each other.
func pruneAndStamp(ctx context.Context, conn *pgx.Conn, name string) error {
	now := time.Now().UTC()
	if err := stamp(ctx, conn, name, now); err != nil {
		return err
	}
	// Pruning is housekeeping: its failures never fail a test run.
	rows, err := conn.Query(ctx, `SELECT datname, coalesce(shobj_description(oid, 'pg_database'), '')
		FROM pg_database WHERE datname LIKE 'sbtpl\_%' AND datname <> $1`, name)
	type tmplRow struct{ name, comment string }
	var others []tmplRow
	if err == nil {
		others, _ = pgx.CollectRows(rows, func(r pgx.CollectableRow) (tmplRow, error) {
			var t tmplRow
			return t, r.Scan(&t.name, &t.comment)
		})
	}
	for _, o := range others {
		used, err := time.Parse(time.RFC3339, strings.TrimPrefix(o.comment, stampPrefix))
		switch {
		case err != nil || !strings.HasPrefix(o.comment, stampPrefix):
			_ = stamp(ctx, conn, o.name, now)
		case now.Sub(used) > templateIdle:
			// Without FORCE: a template some process is cloning right now stays.
			_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{o.name}.Sanitize())
		}
	}
	return nil
}

func stamp(ctx context.Context, conn *pgx.Conn, name string, at time.Time) error {
	// COMMENT takes no parameters; the literal is built from a fixed prefix
	// and a formatted time, never from input.
	_, err := conn.Exec(ctx, "COMMENT ON DATABASE "+pgx.Identifier{name}.Sanitize()+" IS '"+stampPrefix+at.Format(time.RFC3339)+"'")
	return err
}

func migrate(ctx context.Context, dbURL string) error {
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return err
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	_, err = migrations.Up(ctx, db)
	return err
}

func withDatabase(base, name string) string {
	u, err := url.Parse(base)
	if err != nil {
		panic(fmt.Sprintf("pgtest: TEST_DATABASE_URL is not a URL: %v", err))
	}
	u.Path = "/" + name
	return u.String()
}

func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "<unparseable URL>"
	}
	return u.Redacted()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
