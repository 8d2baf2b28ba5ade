//go:build integration

package node_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/pkg/tlsconfig/tlstest"
	"github.com/switchboard/switchboard/services/node"
)

// runLogged runs a node of every service with cfg on a fresh database,
// logging into an observer, waits until it serves (over TLS with client,
// or plaintext when nil) and stops it at cleanup.
func runLogged(t *testing.T, client *tls.Config, tweak func(*config.Config)) (*node.Node, *observer.ObservedLogs) {
	t.Helper()
	cfg := config.Default()
	// Pools of a test's size: the server's connections are shared with
	// the tests running in parallel (pgtest.NodeURL).
	cfg.Postgres.URL = pgtest.NodeURL(pgtest.NewDatabase(t))
	cfg.GRPC.Addr, cfg.HTTP.Addr, cfg.Cluster.Endpoint = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.Cluster.NodeID = "tls-node"
	cfg.Cluster.HeartbeatInterval, cfg.Cluster.StaleThreshold = 100*time.Millisecond, time.Second
	cfg.Shutdown.Grace = 5 * time.Second
	tweak(&cfg)
	core, logs := observer.New(zapcore.InfoLevel)
	ctx, cancel := context.WithCancel(t.Context())
	svcs, err := node.ParseServices("all")
	require.NoError(t, err)
	n, err := node.New(ctx, cfg, zap.New(core), svcs)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(time.Minute):
			t.Error("node did not stop")
		}
	})
	creds := insecure.NewCredentials()
	if client != nil {
		creds = credentials.NewTLS(client)
	}
	conn, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(creds))
	require.NoError(t, err)
	defer conn.Close()
	waitServing(t, conn)
	return n, logs
}

func trusting(roots *x509.CertPool, serverName string) *tls.Config {
	return &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12}
}

// With SWITCHBOARD_TLS_* set, both listeners speak TLS only, and the
// gateway reaches the gRPC listener over TLS too (verified against the CA
// as CLUSTER_ENDPOINT's host): /health answers through it.
func TestNodeServesTLSOnBothListeners(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "node CA")
	f := ca.WriteFiles(t, t.TempDir(), ca.Issue(t, "127.0.0.1"))
	n, logs := runLogged(t, trusting(ca.Pool(), ""), func(c *config.Config) {
		c.TLS.CertFile, c.TLS.KeyFile, c.TLS.CAFile = f.Cert, f.Key, f.CA
	})

	https := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}}
	t.Cleanup(https.CloseIdleConnections)
	get := func(c *http.Client, url string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		require.NoError(t, err)
		resp, err := c.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	// Served over TLS; healthy once its readiness checks have passed (with
	// both cores saturated the first answer was once "degraded": a check
	// had not come back in time).
	var code int
	var body string
	require.Eventually(t, func() bool {
		code, body = get(https, "https://"+n.HTTPAddr()+"/health")
		return code == http.StatusOK && strings.Contains(body, `"status":"healthy"`)
	}, 30*time.Second, 20*time.Millisecond, "GET /health over TLS never answered healthy")

	code, body = get(http.DefaultClient, "http://"+n.HTTPAddr()+"/health")
	require.Equal(t, http.StatusBadRequest, code, "plain HTTP to the HTTPS port")
	require.Contains(t, body, "HTTP request to an HTTPS server")

	plain, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer plain.Close()
	_, err = healthpb.NewHealthClient(plain).Check(t.Context(), &healthpb.HealthCheckRequest{})
	require.Equal(t, codes.Unavailable, status.Code(err), "plaintext gRPC to the TLS port: %v", err)

	require.Equal(t, 1, logs.FilterMessage("TLS on every listener and node-to-node dial").Len())
	require.Zero(t, logs.FilterMessageSnippet("without TLS").Len())
	require.Zero(t, logs.FilterMessageSnippet("will not verify for its peers").Len())
}

// A certificate that the node's peers would refuse (not for the name they
// dial, or not from the CA) is said at startup, once.
func TestNodeWarnsWhenItsCertificateWillNotVerifyForPeers(t *testing.T) {
	t.Parallel()
	ca, other := tlstest.NewCA(t, "node CA"), tlstest.NewCA(t, "another CA")
	for name, tc := range map[string]struct {
		pair   tlstest.Pair
		client *tls.Config // what does accept it
	}{
		"another name": {ca.Issue(t, "node-a.internal"), trusting(ca.Pool(), "node-a.internal")},
		"another CA":   {other.Issue(t, "127.0.0.1"), trusting(other.Pool(), "")},
	} {
		f := ca.WriteFiles(t, t.TempDir(), tc.pair) // ca.crt is ca's either way
		_, logs := runLogged(t, tc.client, func(c *config.Config) {
			c.TLS.CertFile, c.TLS.KeyFile, c.TLS.CAFile = f.Cert, f.Key, f.CA
		})
		warns := logs.FilterMessageSnippet("will not verify for its peers")
		require.Equal(t, 1, warns.Len(), name)
		require.Contains(t, warns.All()[0].ContextMap()["endpoint"], "127.0.0.1:", name)
	}
}

// A listener beyond loopback without TLS gets one warning at startup, naming
// it; loopback listeners, or TLS, get none.
func TestNodeWarnsOnceWhenListeningBeyondLoopbackInClear(t *testing.T) {
	t.Parallel()
	_, logs := runLogged(t, nil, func(c *config.Config) { c.HTTP.Addr = "0.0.0.0:0" })
	warns := logs.FilterMessageSnippet("without TLS").FilterLevelExact(zapcore.WarnLevel)
	require.Equal(t, 1, warns.Len())
	require.Contains(t, warns.All()[0].Message, "bearer tokens")
	require.Equal(t, []any{config.EnvHTTPAddr + "=0.0.0.0:0"}, warns.All()[0].ContextMap()["listeners"])

	_, logs = runLogged(t, nil, func(*config.Config) {})
	require.Zero(t, logs.FilterMessageSnippet("without TLS").Len(), "loopback only")

	ca := tlstest.NewCA(t, "node CA")
	f := ca.WriteFiles(t, t.TempDir(), ca.Issue(t, "127.0.0.1"))
	_, logs = runLogged(t, trusting(ca.Pool(), ""), func(c *config.Config) {
		c.HTTP.Addr = "0.0.0.0:0"
		c.TLS.CertFile, c.TLS.KeyFile = f.Cert, f.Key
	})
	require.Zero(t, logs.FilterMessageSnippet("without TLS").Len(), "TLS on")
}
