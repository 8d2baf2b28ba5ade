//go:build integration

package node_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/tlsconfig/tlstest"
	"github.com/switchboard/switchboard/services/node"
)

// sslPostgres is a PostgreSQL cluster of the test's own (the shared server
// must not be reconfigured), serving TLS with a certificate from an in-test
// CA. Trust auth, like the shared one.
type sslPostgres struct {
	bin, dir string
	port     int
	uid, gid int      // the server's user
	as       []string // PostgreSQL refuses to run as root
}

// startSSLPostgres initdb's a cluster in a temporary folder and starts it
// with ssl=on and pair (which must cover 127.0.0.1).
func startSSLPostgres(t *testing.T, pair tlstest.Pair) *sslPostgres {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		t.Skip("no PostgreSQL server binaries (initdb) under /usr/lib/postgresql: install the postgresql package")
	}
	slices.Sort(bins)
	// Not t.TempDir: its parent folder is private to this user, and the
	// server (the postgres user, when this is root) must reach the folder.
	dir, err := os.MkdirTemp("", "pgtls-") //nolint:usetesting // see above
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	pg := &sslPostgres{bin: filepath.Dir(bins[len(bins)-1]), dir: dir}
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		u, err := user.Lookup("postgres")
		require.NoError(t, err, "running as root needs a postgres system user")
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		pg.as = []string{"runuser", "-u", "postgres", "--"}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0") //nolint:noctx // only to find a free port
	require.NoError(t, err)
	pg.port = lis.Addr().(*net.TCPAddr).Port
	require.NoError(t, lis.Close())

	require.NoError(t, os.Chown(dir, uid, gid))
	data := filepath.Join(dir, "data")
	pg.run(t, "initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	// The server reads its key only if the server's user alone can.
	for name, content := range map[string][]byte{"server.crt": pair.CertPEM, "server.key": pair.KeyPEM} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, content, 0o600))
		require.NoError(t, os.Chown(p, uid, gid))
	}
	pg.uid, pg.gid = uid, gid
	pg.start(t, "on", "hostssl")
	t.Cleanup(func() { pg.stop(t) })
	return pg
}

func (pg *sslPostgres) run(t *testing.T, tool string, args ...string) {
	t.Helper()
	argv := append(append(slices.Clone(pg.as), filepath.Join(pg.bin, tool)), args...)
	out, err := exec.CommandContext(t.Context(), argv[0], argv[1:]...).CombinedOutput() //nolint:gosec // our own arguments
	require.NoError(t, err, "%s: %s", tool, out)
}

// start starts the server with ssl on or off, accepting TCP connections
// of hba's kind: "hostssl" (TLS only) or "host" (either).
func (pg *sslPostgres) start(t *testing.T, ssl, hba string) {
	t.Helper()
	conf := filepath.Join(pg.dir, "data", "pg_hba.conf")
	require.NoError(t, os.WriteFile(conf, []byte(hba+" all all 127.0.0.1/32 trust\n"), 0o600))
	require.NoError(t, os.Chown(conf, pg.uid, pg.gid))
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c ssl=%s -c ssl_cert_file=%s -c ssl_key_file=%s",
		pg.port, pg.dir, ssl, filepath.Join(pg.dir, "server.crt"), filepath.Join(pg.dir, "server.key"))
	pg.run(t, "pg_ctl", "-D", filepath.Join(pg.dir, "data"), "-l", filepath.Join(pg.dir, "server.log"), "-w", "-t", "60", "-o", opts, "start")
}

func (pg *sslPostgres) stop(t *testing.T) {
	t.Helper()
	argv := append(slices.Clone(pg.as), filepath.Join(pg.bin, "pg_ctl"), "-D", filepath.Join(pg.dir, "data"), "-m", "fast", "-w", "stop")
	_ = exec.Command(argv[0], argv[1:]...).Run() //nolint:gosec,noctx // cleanup, after the test's context ended
}

// url is a connection URL for database postgres with query (sslmode…).
func (pg *sslPostgres) url(query string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?%s", pg.port, query)
}

// runNodeOn runs a registry-only node on dbURL until it reports SERVING
// (its pools connected and it migrated), then stops it; or returns the
// error that stopped it first.
func runNodeOn(t *testing.T, dbURL string) error {
	t.Helper()
	cfg := config.Default()
	cfg.Postgres.URL = dbURL
	cfg.Postgres.StartupTimeout = 2 * time.Second
	cfg.GRPC.Addr, cfg.HTTP.Addr, cfg.Cluster.Endpoint = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.Cluster.NodeID = "pg-tls-node"
	cfg.Cluster.HeartbeatInterval, cfg.Cluster.StaleThreshold = 100*time.Millisecond, time.Second
	require.NoError(t, cfg.Validate())
	svcs, err := node.ParseServices("registry")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	n, err := node.New(ctx, cfg, zap.NewNop(), svcs)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	conn, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for {
		select {
		case err := <-done:
			return err
		case <-deadline:
			t.Fatal("the node neither served nor failed within a minute")
		case <-tick.C:
		}
		if grpcServing(t, conn) {
			cancel()
			return <-done
		}
	}
}

// DATABASE_URL's sslmode and sslrootcert are what the node's pools use:
// verify-full against a server whose certificate chains to the CA connects
// over TLS; another CA, or a server without TLS, fails the boot saying why.
func TestNodePoolsUseDatabaseURLTLSSettings(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "postgres CA")
	pg := startSSLPostgres(t, ca.Issue(t, "127.0.0.1"))
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	tlstest.WriteFile(t, caFile, ca.PEM)
	otherCA := filepath.Join(dir, "other.crt")
	tlstest.WriteFile(t, otherCA, tlstest.NewCA(t, "another CA").PEM)

	// The server takes TLS connections only (hostssl), so a node that
	// served talked TLS.
	require.NoError(t, runNodeOn(t, pg.url("sslmode=verify-full&sslrootcert="+caFile)))
	err := runNodeOn(t, pg.url("sslmode=disable"))
	require.ErrorContains(t, err, "no encryption", "the server refuses plaintext")
	conn, err := pgx.Connect(t.Context(), pg.url("sslmode=verify-full&sslrootcert="+caFile))
	require.NoError(t, err)
	defer conn.Close(t.Context())
	var migrated int
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM goose_db_version`).Scan(&migrated))
	require.Positive(t, migrated, "the node migrated over its verify-full pool")

	err = runNodeOn(t, pg.url("sslmode=verify-full&sslrootcert="+otherCA))
	require.ErrorContains(t, err, "postgres not reachable")
	require.ErrorContains(t, err, "certificate signed by unknown authority")

	err = runNodeOn(t, strings.Replace(pg.url("sslmode=verify-full&sslrootcert="+caFile), "127.0.0.1", "localhost", 1))
	require.Error(t, err, "a name the certificate does not cover")
	require.ErrorContains(t, err, "wanted to match localhost")

	pg.stop(t)
	pg.start(t, "off", "host")
	err = runNodeOn(t, pg.url("sslmode=verify-full&sslrootcert="+caFile))
	require.ErrorContains(t, err, "server refused TLS connection")
	require.NoError(t, runNodeOn(t, pg.url("sslmode=disable")), "the control: the server is up")
}
