// Package privatepg runs a PostgreSQL cluster of a test's own: initdb into a
// temporary folder, then start, stop and restart it at will, with settings
// and files of the test's choosing. It is for the tests that must do to
// the server what the shared one on 127.0.0.1:5432 must never undergo: the
// chaos suite's crash-restarts, and a server that speaks TLS only.
//
// The cluster listens on a free port of 127.0.0.1 with trust
// authentication, its unix socket and server.log in its folder. Run as
// root, the server runs as the postgres system user (PostgreSQL refuses
// root), which then owns the folder. It needs the PostgreSQL server
// binaries: make test installs them (deploy/local/postgres.sh), so their
// absence is an error, never a reason to skip.
package privatepg

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Cluster is one private PostgreSQL cluster.
type Cluster struct {
	bin      string   // the PostgreSQL bin folder (initdb, pg_ctl)
	dir      string   // the temporary folder: data/, the socket, server.log
	port     int      // on 127.0.0.1
	as       []string // command prefix running the server's user
	uid, gid int      // the server's user
}

// New initialises a cluster in a new temporary folder named after prefix.
// sync makes initdb flush its files (a cluster whose first crash recovery
// must not pay for them); without it initdb is quicker.
func New(ctx context.Context, prefix string, sync bool) (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	// Not a test's TempDir: its parent folder is private to this user, and
	// the server's user must reach the folder.
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, dir: dir, uid: os.Getuid(), gid: os.Getgid()}
	if err := c.init(ctx, sync); err != nil {
		c.Remove()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) init(ctx context.Context, sync bool) error {
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return fmt.Errorf("running as root needs a postgres system user: %w", err)
		}
		c.uid, _ = strconv.Atoi(u.Uid)
		c.gid, _ = strconv.Atoi(u.Gid)
		c.as = []string{"runuser", "-u", "postgres", "--"}
		if err := os.Chown(c.dir, c.uid, c.gid); err != nil {
			return err
		}
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	c.port = port
	args := []string{"-D", c.DataDir(), "-U", "postgres", "--auth=trust", "-E", "UTF8"}
	if !sync {
		args = append(args, "--no-sync")
	}
	return c.Run(ctx, "initdb", args...)
}

// binDir finds initdb: pg_config's bindir, else the newest
// /usr/lib/postgresql/*/bin.
func binDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil { //nolint:noctx // a quick lookup
		if d := strings.TrimSpace(string(out)); fileExists(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, d := range dirs {
		if fileExists(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries (initdb) found: install the postgresql package (deploy/local/postgres.sh does)")
}

func versionOf(bindir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(bindir)))
	return v
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// FreePort returns a free loopback port for a process a test starts. The
// port is tried with a listener that is closed at once, so it is only very
// likely still free when it is used. It comes from below the kernel's
// ephemeral range (ip_local_port_range) where that leaves room: a port from
// inside it can be taken as the local port of any outgoing connection in
// the meantime, and with the e2e tier's processes and database connections
// running beside the chaos suite one was (a chaos node failed to bind).
// Below the range only another deliberate listener can take it. A port
// this process was given before is never handed out twice.
func FreePort() (int, error) {
	givenMu.Lock()
	defer givenMu.Unlock()
	lo, hi := fixedPorts()
	for range 200 {
		addr := "127.0.0.1:0"
		if hi > lo {
			addr = "127.0.0.1:" + strconv.Itoa(lo+rand.IntN(hi-lo)) //nolint:gosec // a spread, not a secret
		}
		lis, err := net.Listen("tcp", addr) //nolint:noctx // only to find a free port
		if err != nil {
			if hi > lo {
				continue // taken: try another
			}
			return 0, err
		}
		port := lis.Addr().(*net.TCPAddr).Port //nolint:forcetypeassert // a TCP listener's address
		_ = lis.Close()
		if !given[port] {
			given[port] = true
			return port, nil
		}
	}
	return 0, errors.New("no free loopback port this process has not been given already")
}

// fixedPorts is the range FreePort draws from: 10000 up to the start of the
// kernel's ephemeral range, at most 26000 (the TypeScript SDK's test
// harness scans 26000-26999). An empty range (hi <= lo) means: ask the
// kernel.
func fixedPorts() (lo, hi int) {
	lo, hi = 10000, 26000
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0
	}
	ephemeral, err := strconv.Atoi(f[0])
	if err != nil {
		return 0, 0
	}
	return lo, min(hi, ephemeral)
}

// given is every port FreePort handed out in this process.
var (
	givenMu sync.Mutex
	given   = map[int]bool{}
)

// Dir is the cluster's folder (server.log is there).
func (c *Cluster) Dir() string { return c.dir }

// DataDir is the data folder.
func (c *Cluster) DataDir() string { return filepath.Join(c.dir, "data") }

// Port is the TCP port on 127.0.0.1.
func (c *Cluster) Port() int { return c.port }

// URL is the connection URL of database db, with query ("sslmode=disable").
func (c *Cluster) URL(db, query string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?%s", c.port, db, query)
}

// WriteFile writes content to path (relative to Dir), readable by the
// server's user alone: PostgreSQL reads a TLS key only then.
func (c *Cluster) WriteFile(path string, content []byte) (string, error) {
	p := filepath.Join(c.dir, path)
	if err := os.WriteFile(p, content, 0o600); err != nil {
		return "", err
	}
	return p, os.Chown(p, c.uid, c.gid)
}

// Run runs one of the server's tools (initdb, pg_ctl…) as the server's user.
func (c *Cluster) Run(ctx context.Context, tool string, args ...string) error {
	argv := append(append(slices.Clone(c.as), filepath.Join(c.bin, tool)), args...)
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput() //nolint:gosec // our own arguments
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", tool, strings.Join(args, " "), err, out)
	}
	return nil
}

// Start starts the server and waits (-w) until it accepts connections.
// settings are more "-c" settings, quoted for pg_ctl's shell where a
// value holds spaces ("log_line_prefix='%m [%p] '").
func (c *Cluster) Start(ctx context.Context, settings ...string) error {
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s", c.port, c.dir)
	for _, s := range settings {
		opts += " -c " + s
	}
	return c.Run(ctx, "pg_ctl", "-D", c.DataDir(), "-l", filepath.Join(c.dir, "server.log"), "-w", "-t", "60", "-o", opts, "start")
}

// Stop stops the server in mode ("fast", or "immediate": no shutdown
// checkpoint, so the next start runs crash recovery and empties every
// UNLOGGED table, as a real crash does).
func (c *Cluster) Stop(ctx context.Context, mode string) error {
	return c.Run(ctx, "pg_ctl", "-D", c.DataDir(), "-m", mode, "-w", "stop")
}

// Remove deletes the cluster's folder; stop the server first.
func (c *Cluster) Remove() { _ = os.RemoveAll(c.dir) }
