//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard/switchboard/pkg/pgtest/privatepg"
)

// pgCluster is the suite's own PostgreSQL cluster (pkg/pgtest/privatepg).
// The shared server on 127.0.0.1:5432 must never be restarted, and a
// crash-restart is one of the faults. fsync stays on: a crash must lose
// nothing that was committed.
type pgCluster struct{ *privatepg.Cluster }

// settings are the server's: fsync on, room for three nodes' pools, and a
// log whose lines start with a UTC time to the millisecond (lastLogged).
var settings = []string{"fsync=on", "max_connections=300", "log_timezone=UTC", "log_line_prefix='%m [%p] '"}

// startCluster initialises and starts a private cluster. initdb flushes
// its files, as a cluster that has been running for a while has them on
// disk; otherwise the first crash recovery's sync of the data folder pays
// for them (seconds here), an outage no production restart has.
func startCluster(ctx context.Context) (*pgCluster, error) {
	c, err := privatepg.New(ctx, "chaos-pg-", true)
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx, settings...); err != nil {
		c.Remove()
		return nil, err
	}
	return &pgCluster{c}, nil
}

// url is the connection URL of database db.
func (c *pgCluster) url(db string) string { return c.URL(db, "sslmode=disable") }

// crashRestart stops the server with `pg_ctl -m immediate` (no shutdown
// checkpoint: the restart runs crash recovery and empties every UNLOGGED
// table, as a real crash does) and starts it again. It returns when the
// server received the stop and when it was ready to accept connections
// again, both from the server's own log: a client polling for the second
// moment measures it late whenever the machine is busy (by seconds, seen
// here, with three nodes reconnecting at once), and a late "back" would
// make the resume time after it look shorter than it was.
func (c *pgCluster) crashRestart(ctx context.Context) (down, accepting time.Time, err error) {
	began := time.Now()
	if err := c.Stop(ctx, "immediate"); err != nil {
		return down, accepting, err
	}
	stopped := time.Now()
	if err := c.Start(ctx, settings...); err != nil {
		return down, accepting, err
	}
	fmt.Printf("chaos: postgres crash-restart: immediate stop took %s, start -w %s\n",
		stopped.Sub(began).Round(time.Millisecond), time.Since(stopped).Round(time.Millisecond))
	down, err = c.lastLogged("received immediate shutdown request")
	if err != nil {
		return down, accepting, err
	}
	accepting, err = c.lastLogged("database system is ready to accept connections")
	if err == nil && !accepting.After(down) {
		err = fmt.Errorf("server.log: no ready line after the immediate shutdown at %s", down)
	}
	return down, accepting, err
}

// lastLogged is the time of the last server.log line containing msg. The
// server logs in UTC with milliseconds (log_timezone, log_line_prefix).
func (c *pgCluster) lastLogged(msg string) (time.Time, error) {
	b, err := os.ReadFile(filepath.Join(c.Dir(), "server.log"))
	if err != nil {
		return time.Time{}, err
	}
	lines := strings.Split(string(b), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := lines[i]; strings.Contains(l, msg) && len(l) >= len(logTime) {
			return time.Parse(logTime, l[:len(logTime)])
		}
	}
	return time.Time{}, fmt.Errorf("server.log has no line %q", msg)
}

// logTime is the start of every server.log line (log_line_prefix '%m ').
const logTime = "2006-01-02 15:04:05.000 UTC"

// stop shuts the cluster down and removes its folder.
func (c *pgCluster) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = c.Stop(ctx, "fast")
	// Keep the server's log with the others (logDir is kept on failure).
	if b, err := os.ReadFile(filepath.Join(c.Dir(), "server.log")); err == nil {
		_ = os.WriteFile(filepath.Join(logDir, "postgres.log"), b, 0o644)
	}
	c.Remove()
}

// createDatabase creates database name and returns a pool on it.
func (c *pgCluster) createDatabase(ctx context.Context, name string) (*pgxpool.Pool, error) {
	conn, err := pgx.Connect(ctx, c.url("postgres"))
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(c.url(name))
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 4
	return pgxpool.NewWithConfig(ctx, cfg)
}
