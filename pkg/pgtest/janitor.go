//go:build integration || e2e

package pgtest

import (
	"context"
	"os"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Why test databases are dropped in the background: on PostgreSQL 15 every
// DROP DATABASE forces an immediate checkpoint and waits for it
// (dbcommands.c, dropdb), writing and fsyncing every dirty buffer of the
// whole server. Each test used to wait in its cleanup for one, ~450 times
// per run of the integration tier. Measured on the 2-core CI machine (make
// integration, warm): 290 s with those waits, 278 s with this janitor, 255 s
// with no drop at all. Two sessions drop at once, so drops waiting together
// share a checkpoint.

// Tests wraps a package's *testing.M so that its tests' cleanups hand their
// databases to a background janitor instead of dropping them on the spot,
// and Run returns only once the janitor has dropped them all:
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(pgtest.Tests(m)) }
//	func TestMain(m *testing.M) { os.Exit(pgtest.Tests(m).Run()) }
//
// In a package whose TestMain does not use it, each cleanup drops its
// database itself.
func Tests(m *testing.M) interface{ Run() int } { return drainedTests{m} }

type drainedTests struct{ m *testing.M }

func (d drainedTests) Run() int {
	janitor.start()
	defer closeAdmin()
	defer janitor.finish()
	return d.m.Run()
}

// closeAdmin ends the shared admin session (pgtest.go) once the tests are
// done. Left open, it kept a goroutine of pgx's alive past the tests when a
// write on it had been slow (pgconn then starts a background reader, which
// stays blocked in a read until the connection closes), and goleak, which
// runs after Tests, failed a package that way on a loaded machine.
func closeAdmin() {
	admin.mu.Lock()
	defer admin.mu.Unlock()
	if admin.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = admin.conn.Close(ctx)
		admin.conn = nil
	}
}

// RunEnv names the environment variable a test runner sets when it sweeps
// up after its test processes (deploy/local/pgtest-sweep.sh; make test's
// tiers do): with PGTEST_RUN=tag every database is named sbtest_<tag>_…, so
// what a killed process (a -timeout, a panic) left behind is found and
// dropped once go test has exited.
const RunEnv = "PGTEST_RUN"

var runTagPattern = regexp.MustCompile(`^[a-z0-9]{1,16}$`)

// databaseName returns a new test database's name. A PGTEST_RUN that could
// not be part of one panics: a runner's bug, never a test's.
func databaseName() string {
	tag := os.Getenv(RunEnv)
	if tag == "" {
		return "sbtest_" + randomHex(8)
	}
	if !runTagPattern.MatchString(tag) {
		panic("pgtest: " + RunEnv + " must be 1-16 of [a-z0-9], got " + tag)
	}
	return "sbtest_" + tag + "_" + randomHex(8)
}

// janitorWorkers is how many sessions drop at once. janitorBacklog is how
// many databases may wait for them before a cleanup waits too: it bounds
// what a process that dies leaves behind, and the disk those hold meanwhile
// (a clone is ~10 MB).
const (
	janitorWorkers = 2
	janitorBacklog = 16
)

var janitor dropQueue

type dropQueue struct {
	mu      sync.Mutex
	names   chan string // nil unless Tests' Run is running
	workers sync.WaitGroup
}

// start makes cleanups queue their drops, and starts the workers.
func (q *dropQueue) start() {
	q.mu.Lock()
	defer q.mu.Unlock()
	names := make(chan string, janitorBacklog)
	q.names = names
	for range janitorWorkers {
		q.workers.Go(func() { dropEach(names) })
	}
}

// finish waits until every queued database was dropped and the workers
// ended (goleak, which runs after it, sees no goroutine of theirs).
func (q *dropQueue) finish() {
	q.mu.Lock()
	close(q.names)
	q.names = nil
	q.mu.Unlock()
	q.workers.Wait()
}

// enqueue hands name to the workers and reports true, or reports false when
// no janitor runs (the caller drops it then).
func (q *dropQueue) enqueue(name string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.names == nil {
		return false
	}
	q.names <- name // a full backlog holds the cleanup (and enqueue's lock) until a worker takes one
	return true
}

// dropEach drops every database it receives, on its own admin session. A
// drop that failed is left to the runner's sweep (RunEnv): the test it
// belonged to has ended, so there is no one to report it to.
func dropEach(names <-chan string) {
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			_ = conn.Close(context.Background())
		}
	}()
	for name := range names {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if conn == nil || conn.IsClosed() {
			conn, _ = connectAdmin(ctx)
		}
		if conn != nil {
			_, _ = conn.Exec(ctx, dropStatement(name))
		}
		cancel()
	}
}
