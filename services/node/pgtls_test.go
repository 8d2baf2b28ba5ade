//go:build integration

package node_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/pgtest/privatepg"
	"github.com/switchboard/switchboard/pkg/tlsconfig/tlstest"
	"github.com/switchboard/switchboard/services/node"
)

// sslPostgres is a PostgreSQL cluster of the test's own (the shared server
// must not be reconfigured), serving TLS with a certificate from an in-test
// CA. Trust auth, like the shared one.
type sslPostgres struct{ *privatepg.Cluster }

// startSSLPostgres initdb's a cluster and starts it with ssl=on and pair
// (which must cover 127.0.0.1), taking TLS connections only.
func startSSLPostgres(t *testing.T, pair tlstest.Pair) *sslPostgres {
	t.Helper()
	c, err := privatepg.New(t.Context(), "pgtls-", false)
	require.NoError(t, err)
	t.Cleanup(c.Remove)
	pg := &sslPostgres{c}
	for name, content := range map[string][]byte{"server.crt": pair.CertPEM, "server.key": pair.KeyPEM} {
		_, err := c.WriteFile(name, content)
		require.NoError(t, err)
	}
	pg.start(t, "on", "hostssl")
	t.Cleanup(func() { pg.stop(t) })
	return pg
}

// start starts the server with ssl on or off, accepting TCP connections
// of hba's kind: "hostssl" (TLS only) or "host" (either).
func (pg *sslPostgres) start(t *testing.T, ssl, hba string) {
	t.Helper()
	_, err := pg.WriteFile(filepath.Join("data", "pg_hba.conf"), []byte(hba+" all all 127.0.0.1/32 trust\n"))
	require.NoError(t, err)
	require.NoError(t, pg.Start(t.Context(), "fsync=off", "ssl="+ssl,
		"ssl_cert_file="+filepath.Join(pg.Dir(), "server.crt"), "ssl_key_file="+filepath.Join(pg.Dir(), "server.key")))
}

// stop stops the server; at cleanup too, after the test's context ended.
func (pg *sslPostgres) stop(t *testing.T) {
	t.Helper()
	_ = pg.Stop(context.WithoutCancel(t.Context()), "fast")
}

// url is a connection URL for database postgres with query (sslmode…).
func (pg *sslPostgres) url(query string) string { return pg.URL("postgres", query) }

// Boot's startup timeouts: a node expected to fail retries its connection
// for refusedWithin before giving up (and reports the last refusal, which
// the test checks: with both cores saturated a 2 s bound ended before one
// TLS handshake had); one expected to serve may take servesWithin to
// connect and migrate a fresh database (a loaded machine took more than
// 2 s for the migrations alone).
const (
	refusedWithin = 5 * time.Second
	servesWithin  = time.Minute
)

// runNodeOn runs a registry-only node on dbURL until it reports SERVING
// (its pools connected and it migrated), then stops it; or returns the
// error that stopped it first, at the latest after startup. It only
// returns errors, so that refusals, which each wait out refusedWithin, can
// run at once on goroutines of one test.
func runNodeOn(t *testing.T, dbURL string, startup time.Duration) error {
	t.Helper()
	cfg := config.Default()
	cfg.Postgres.URL = dbURL
	cfg.Postgres.StartupTimeout = startup
	cfg.GRPC.Addr, cfg.HTTP.Addr, cfg.Cluster.Endpoint = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.Cluster.NodeID = "pg-tls-node"
	cfg.Cluster.HeartbeatInterval, cfg.Cluster.StaleThreshold = 100*time.Millisecond, time.Second
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("the test's config: %w", err)
	}
	svcs, err := node.ParseServices("registry")
	if err != nil {
		return fmt.Errorf("the test's services: %w", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	n, err := node.New(ctx, cfg, zap.NewNop(), svcs)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	conn, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		cancel()
		return errors.Join(fmt.Errorf("the test's client: %w", err), <-done)
	}
	defer conn.Close()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(startup + time.Minute)
	for {
		select {
		case err := <-done:
			return err
		case <-deadline:
			cancel()
			return errors.Join(fmt.Errorf("the node neither served nor failed within %s", startup+time.Minute), <-done)
		case <-tick.C:
		}
		if grpcServing(t, conn) {
			cancel()
			return <-done
		}
	}
}

// runNodesOn runs runNodeOn on every URL at once and returns their errors
// in order: each refusal waits out its startup timeout, and one after the
// other they made this the slowest test of the package. Only for nodes
// that are refused: they share one node id, which two registered nodes
// could not.
func runNodesOn(t *testing.T, startup time.Duration, urls ...string) []error {
	t.Helper()
	errs := make([]error, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() { errs[i] = runNodeOn(t, u, startup) })
	}
	wg.Wait()
	return errs
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
	require.NoError(t, runNodeOn(t, pg.url("sslmode=verify-full&sslrootcert="+caFile), servesWithin))
	conn, err := pgx.Connect(t.Context(), pg.url("sslmode=verify-full&sslrootcert="+caFile))
	require.NoError(t, err)
	defer conn.Close(t.Context())
	var migrated int
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM goose_db_version`).Scan(&migrated))
	require.Positive(t, migrated, "the node migrated over its verify-full pool")

	refused := runNodesOn(t, refusedWithin,
		pg.url("sslmode=disable"),
		pg.url("sslmode=verify-full&sslrootcert="+otherCA),
		strings.Replace(pg.url("sslmode=verify-full&sslrootcert="+caFile), "127.0.0.1", "localhost", 1))
	require.ErrorContains(t, refused[0], "no encryption", "the server refuses plaintext")
	require.ErrorContains(t, refused[1], "postgres not reachable")
	require.ErrorContains(t, refused[1], "certificate signed by unknown authority")
	require.Error(t, refused[2], "a name the certificate does not cover")
	require.ErrorContains(t, refused[2], "wanted to match localhost")

	pg.stop(t)
	pg.start(t, "off", "host")
	err = runNodeOn(t, pg.url("sslmode=verify-full&sslrootcert="+caFile), refusedWithin)
	require.ErrorContains(t, err, "server refused TLS connection")
	require.NoError(t, runNodeOn(t, pg.url("sslmode=disable"), servesWithin), "the control: the server is up")
}
