//go:build integration

package node_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/pkg/tlsconfig/tlstest"
	"github.com/switchboard/switchboard/services/node"
)

// runServices runs a node of services with cfg's TLS on dbURL until the
// test ends.
func runServices(t *testing.T, dbURL, id, services string, tweak func(*config.Config)) *node.Node {
	t.Helper()
	cfg := config.Default()
	// Pools of a test's size: the server's connections are shared with
	// the tests running in parallel (pgtest.NodeURL).
	cfg.Postgres.URL = pgtest.NodeURL(dbURL)
	cfg.GRPC.Addr, cfg.HTTP.Addr, cfg.Cluster.Endpoint = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.Cluster.NodeID = id
	cfg.Cluster.HeartbeatInterval, cfg.Cluster.StaleThreshold = 100*time.Millisecond, 2*time.Second
	cfg.Shutdown.Grace = 5 * time.Second
	tweak(&cfg)
	ctx, cancel := context.WithCancel(t.Context())
	svcs, err := node.ParseServices(services)
	require.NoError(t, err)
	n, err := node.New(ctx, cfg, zap.NewNop(), svcs)
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
	return n
}

// TestGatewayRoutesByTheRegistryOverTLS: a gateway-only node reaches the
// registry on another node, found only through node_registry, over TLS
// verified as the address's host; and forwards a webhook to that node's
// ingest over https (the ingest answers: 404 for an unknown endpoint, not
// the gateway's 503).
func TestGatewayRoutesByTheRegistryOverTLS(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "cluster CA")
	f := ca.WriteFiles(t, t.TempDir(), ca.Issue(t, "127.0.0.1"))
	withTLS := func(c *config.Config) { c.TLS.CertFile, c.TLS.KeyFile, c.TLS.CAFile = f.Cert, f.Key, f.CA }
	db := pgtest.NewDatabase(t)
	runServices(t, db, "backend", "registry,ingest", withTLS)
	gw := runServices(t, db, "edge", "gateway", withTLS)

	https := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}}
	t.Cleanup(https.CloseIdleConnections)
	send := func(method, path string) (int, string, error) {
		req, err := http.NewRequestWithContext(t.Context(), method, "https://"+gw.HTTPAddr()+path, strings.NewReader("{}"))
		if err != nil {
			return 0, "", err
		}
		resp, err := https.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	var code int
	var body string
	require.Eventually(t, func() bool {
		var err error
		code, body, err = send(http.MethodGet, "/health")
		return err == nil && code == http.StatusOK
	}, 30*time.Second, 20*time.Millisecond, "GET /health through the gateway: %d %s", code, body)
	require.Contains(t, body, `"node_id":"backend"`, "answered by the registry's node")

	code, body, err := send(http.MethodPost, "/hooks/no-such-endpoint")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, code, "the ingest node's answer, over https: %s", body)
	code, body, err = send(http.MethodGet, "/hooks/no-such-endpoint?hub.mode=subscribe")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, code, "a handshake's GET reaches the ingest node too: %s", body)
}
