//go:build chaos

package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgCluster is a PostgreSQL cluster of the suite's own. The shared server
// on 127.0.0.1:5432 must never be restarted, and a crash-restart is one of
// the faults, so the suite initdb's a cluster into a temporary folder:
// trust auth, fsync on (a crash must lose nothing that was committed), a
// free port on 127.0.0.1 and its unix socket in the same folder.
type pgCluster struct {
	bin  string   // the PostgreSQL bin folder (initdb, pg_ctl)
	dir  string   // the temporary folder: data/, the socket, server.log
	port int      // on 127.0.0.1
	as   []string // command prefix: PostgreSQL refuses to run as root
}

// pgBinDir finds initdb: pg_config's bindir, else the newest
// /usr/lib/postgresql/*/bin.
func pgBinDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil { //nolint:noctx // a quick lookup
		if d := strings.TrimSpace(string(out)); fileExists(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if fileExists(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL binaries (initdb) found: install postgresql")
}

func versionOf(bindir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(bindir)))
	return v
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// freePort asks the kernel for a free loopback port. The listener is closed
// at once, so the port is only very likely still free when it is used.
func freePort() (int, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0") //nolint:noctx // only to find a free port
	if err != nil {
		return 0, err
	}
	defer lis.Close()
	return lis.Addr().(*net.TCPAddr).Port, nil
}

// startCluster initialises and starts a private cluster.
func startCluster(ctx context.Context) (*pgCluster, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "chaos-pg-")
	if err != nil {
		return nil, err
	}
	c := &pgCluster{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		// Root runs the server as the postgres system user, which must own
		// the folder (os.MkdirTemp made it 0700 for root).
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs a postgres system user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		c.as = []string{"runuser", "-u", "postgres", "--"}
	}
	if c.port, err = freePort(); err != nil {
		return nil, err
	}
	// Without --no-sync: initdb flushes its files, as a cluster that has been
	// running for a while has them on disk. Otherwise the first crash
	// recovery's sync of the data folder pays for them (seconds here), an
	// outage no production restart has.
	if err := c.run(ctx, "initdb", "-D", c.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8"); err != nil {
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *pgCluster) data() string { return filepath.Join(c.dir, "data") }

// url is the connection URL of database db.
func (c *pgCluster) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

func (c *pgCluster) run(ctx context.Context, tool string, args ...string) error {
	argv := append(append(append([]string{}, c.as...), filepath.Join(c.bin, tool)), args...)
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput() //nolint:gosec // our own arguments
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", tool, strings.Join(args, " "), err, out)
	}
	return nil
}

// start starts the server and waits (-w) until it accepts connections.
func (c *pgCluster) start(ctx context.Context) error {
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=on -c max_connections=300"+
		" -c log_timezone=UTC -c log_line_prefix='%%m [%%p] '", c.port, c.dir)
	return c.run(ctx, "pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "server.log"), "-w", "-t", "60", "-o", opts, "start")
}

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
	if err := c.run(ctx, "pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop"); err != nil {
		return down, accepting, err
	}
	stopped := time.Now()
	if err := c.start(ctx); err != nil {
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
	b, err := os.ReadFile(filepath.Join(c.dir, "server.log"))
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
	_ = c.run(ctx, "pg_ctl", "-D", c.data(), "-m", "fast", "-w", "stop")
	// Keep the server's log with the others (logDir is kept on failure).
	if b, err := os.ReadFile(filepath.Join(c.dir, "server.log")); err == nil {
		_ = os.WriteFile(filepath.Join(logDir, "postgres.log"), b, 0o644)
	}
	_ = os.RemoveAll(c.dir)
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
