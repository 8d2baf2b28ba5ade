//go:build e2e

package binary_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/structpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/pkg/tlsconfig/tlstest"
	"github.com/switchboard/switchboard/pkg/worker"
	"github.com/switchboard/switchboard/services/internal/e2e/e2etest"
)

// tlsNode is a node serving TLS with its own certificate files.
type tlsNode struct {
	*e2etest.Node
	files tlstest.Files
}

// startTLSNode starts `serve all` with TLS on both listeners and every
// link, mesh client certificates required, and waits until it serves.
func startTLSNode(t *testing.T, ca *tlstest.CA, db, id string) *tlsNode {
	t.Helper()
	files := ca.WriteFiles(t, t.TempDir(), ca.Issue(t, "127.0.0.1", "localhost"))
	p := e2etest.Start(t, append(e2etest.BaseEnv(db),
		"CLUSTER_NODE_ID="+id,
		"CLUSTER_HEARTBEAT_INTERVAL="+e2etest.HeartbeatInterval.String(),
		"CLUSTER_STALE_THRESHOLD="+e2etest.StaleThreshold.String(),
		"REALTIME_EPHEMERAL_TRANSPORT=mesh",
		"SWITCHBOARD_CLUSTER_SECRET=tls-e2e-cluster-secret-0123456789abcdef",
		"SWITCHBOARD_TLS_CERT_FILE="+files.Cert,
		"SWITCHBOARD_TLS_KEY_FILE="+files.Key,
		"SWITCHBOARD_TLS_CA_FILE="+files.CA,
		"SWITCHBOARD_TLS_CLIENT_AUTH=mesh",
	), "serve", "all")
	n := &tlsNode{Node: &e2etest.Node{Process: p, ID: id}, files: files}
	n.GRPC, _ = p.WaitField(t, "gRPC listening", "addr").(string)
	n.HTTP, _ = p.WaitField(t, "HTTP listening", "addr").(string)
	conn := dialTLS(t, ca, n.GRPC, "")
	hc := healthpb.NewHealthClient(conn)
	require.Eventually(t, func() bool {
		resp, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{})
		return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
	}, 60*time.Second, 20*time.Millisecond, "%s never reported SERVING over TLS; output:\n%s", id, p.Output())
	return n
}

// dialTLS is a gRPC client verifying the node against ca, with token.
func dialTLS(t *testing.T, ca *tlstest.CA, addr, token string) *grpc.ClientConn {
	t.Helper()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}))}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(auth.Bearer{Token: token}))
	}
	conn, err := grpc.NewClient(addr, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// servedSerial is the serial of the certificate a new handshake with addr gets.
func servedSerial(t *testing.T, ca *tlstest.CA, addr string) *big.Int {
	t.Helper()
	d := tls.Dialer{Config: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}
	c, err := d.DialContext(t.Context(), "tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	return c.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber
}

// grpcurlBinary finds grpcurl where deploy/local/tools.sh installs it.
func grpcurlBinary(t *testing.T) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "env", "GOBIN", "GOPATH").Output()
	require.NoError(t, err)
	dirs := strings.Fields(string(out))
	if len(dirs) == 2 {
		dirs[1] = filepath.Join(dirs[1], "bin")
	}
	for _, d := range dirs {
		if p := filepath.Join(d, "grpcurl"); fileExists(p) {
			return p
		}
	}
	if p, err := exec.LookPath("grpcurl"); err == nil {
		return p
	}
	t.Fatal("grpcurl not found in GOBIN or PATH: run deploy/local/tools.sh grpcurl (make test does)")
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TLS on every listener and link, with the real binary: two nodes whose
// mesh links are mutual TLS carry an ephemeral event from A to a
// subscriber on B; the gateway reaches gRPC over TLS (HTTPS REST works,
// plain HTTP to the port does not); an SDK worker completes a todo over
// TLS; grpcurl works with the CA and not in plaintext; the bench commands
// take the CA; and a certificate rotated on disk is what new handshakes
// get, after a broken half-rotation that changed nothing.
func TestTLSOnEveryListenerAndLink(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "switchboard e2e CA")
	db := pgtest.NewDatabase(t)
	a, b := startTLSNode(t, ca, db, "tls-a"), startTLSNode(t, ca, db, "tls-b")
	for _, n := range []*tlsNode{a, b} {
		_, on := n.Field("TLS on every listener and node-to-node dial", "serial")
		require.True(t, on, "%s logs its TLS", n.ID)
		require.NotContains(t, n.Output(), "without TLS")
	}

	// The realtime mesh over mutual TLS: ephemeral events never touch
	// Postgres, so only a link from A to B can carry them.
	token := e2etest.AgentToken(t, dialTLS(t, ca, a.GRPC, e2etest.AdminToken), "rt")
	rt := func(n *tlsNode) *rtNode {
		conn := dialTLS(t, ca, n.GRPC, token)
		return &rtNode{Node: n.Node, rt: realtimev1.NewRealtimeServiceClient(conn), queue: queuev1.NewQueueServiceClient(conn)}
	}
	rtA, rtB := rt(a), rt(b)
	s := rtB.subscribe(t, &realtimev1.SubscribeRequest{Channels: []string{"room"}, IncludeEphemeral: true})
	rtA.waitPresent(t, "room", 1)
	ephemeralFlows(t, rtA, s)

	// The gateway → gRPC over TLS: an HTTPS REST call through it.
	httpsClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}}
	t.Cleanup(httpsClient.CloseIdleConnections)
	code, body := httpGet(t, httpsClient, "https://"+a.HTTP+"/api/admin/cluster")
	require.Equal(t, http.StatusOK, code, body)
	var cluster struct {
		Data []struct {
			NodeID string `json:"node_id"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &cluster), body)
	require.Len(t, cluster.Data, 2, body)
	code, body = httpGet(t, http.DefaultClient, "http://"+a.HTTP+"/api/admin/cluster")
	require.Equal(t, http.StatusBadRequest, code, "plain HTTP to the TLS port")
	require.Contains(t, body, "HTTP request to an HTTPS server")
	require.NotContains(t, body, "tls-a")

	workerCompletesOverTLS(t, ca, a, rtA, token)

	// grpcurl with the CA lists the services; in plaintext it fails.
	grpcurl := grpcurlBinary(t)
	out, err := exec.CommandContext(t.Context(), grpcurl, "-cacert", a.files.CA, a.GRPC, "list").CombinedOutput() //nolint:gosec // our own arguments
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "switchboard.queue.v1.QueueService")
	out, err = exec.CommandContext(t.Context(), grpcurl, "-plaintext", a.GRPC, "list").CombinedOutput() //nolint:gosec // our own arguments
	require.Error(t, err, "grpcurl -plaintext against the TLS port: %s", out)
	require.NotContains(t, string(out), "switchboard.queue.v1.QueueService")

	benchOverTLS(t, a, token)
	rotate(t, ca, a)
}

func httpGet(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e2etest.AdminToken)
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// workerCompletesOverTLS: pkg/worker dialing with the CA claims and
// completes a todo.
func workerCompletesOverTLS(t *testing.T, ca *tlstest.CA, n *tlsNode, rt *rtNode, token string) {
	t.Helper()
	payload, err := structpb.NewStruct(map[string]any{"over": "tls"})
	require.NoError(t, err)
	enq, err := rt.queue.Enqueue(t.Context(), &queuev1.EnqueueRequest{Queue: "tls-q", Payload: payload})
	require.NoError(t, err)
	id := enq.GetTodo().GetId()

	conn, err := worker.Dial([]string{n.GRPC}, worker.DialOptions{Token: token, TLS: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}})
	require.NoError(t, err)
	defer conn.Close()
	acked := make(chan worker.Outcome, 1)
	w := worker.New(conn, "tls-q", func(_ context.Context, todo *queuev1.Todo) error {
		if todo.GetPayload().GetFields()["over"].GetStringValue() != "tls" {
			return worker.Permanent(io.ErrUnexpectedEOF)
		}
		return nil
	}, worker.Options{Concurrency: 1, OnAck: func(todo *queuev1.Todo, o worker.Outcome, _ error) {
		if todo.GetId() == id {
			acked <- o
		}
	}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	select {
	case o := <-acked:
		require.Equal(t, worker.Completed, o)
	case err := <-done:
		t.Fatalf("worker stopped: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the worker did not complete the todo within 60 s")
	}
	cancel()
	require.NoError(t, <-done)
	got, err := rt.queue.GetTodo(t.Context(), &queuev1.GetTodoRequest{Id: id})
	require.NoError(t, err)
	require.Equal(t, queuev1.TodoState_TODO_STATE_COMPLETED, got.GetTodo().GetState())
}

// benchOverTLS: `switchboard bench queue --cacert` and `bench ingest
// --url https://… --cacert` reach the node (small sizes: the path works).
func benchOverTLS(t *testing.T, n *tlsNode, token string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), e2etest.Binary(), "bench", "queue", "--addr", n.GRPC, "--cacert", n.files.CA, //nolint:gosec // our own binary
		"--todos", "100", "--workers", "4", "--trickle", "5", "--queue", "tls-bench")
	cmd.Env = []string{"SWITCHBOARD_TOKEN=" + token}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `(?m)^RESULT jobs_per_s=\d+`, string(out))

	cmd = exec.CommandContext(t.Context(), e2etest.Binary(), "bench", "ingest", "--url", "https://"+n.HTTP, "--cacert", n.files.CA, //nolint:gosec // our own binary
		"--requests", "20", "--concurrency", "2")
	cmd.Env = []string{"SWITCHBOARD_TOKEN=" + e2etest.AdminToken}
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `(?m)^RESULT accepted_per_s=\d+`, string(out))
}

// rotate rewrites a's certificate files as a secret rotation does. First a
// broken half (the new certificate, the old key): logged, and the old
// certificate stays. Then the whole new pair: new handshakes on both
// listeners get it, with no restart.
func rotate(t *testing.T, ca *tlstest.CA, a *tlsNode) {
	t.Helper()
	old := servedSerial(t, ca, a.GRPC)
	next := ca.Issue(t, "127.0.0.1", "localhost")
	tlstest.WriteFile(t, a.files.Cert, next.CertPEM)
	require.Eventually(t, func() bool {
		servedSerial(t, ca, a.GRPC) // the files are looked at on a handshake
		_, logged := a.Field("TLS certificate files changed but do not load; still serving the previous certificate", "error")
		return logged
	}, 60*time.Second, 100*time.Millisecond, "the broken pair was never noticed; output:\n%s", a.Output())
	require.Equal(t, old, servedSerial(t, ca, a.GRPC), "the old certificate is still served")

	tlstest.WriteFile(t, a.files.Key, next.KeyPEM)
	require.Eventually(t, func() bool { return servedSerial(t, ca, a.GRPC).Cmp(next.Serial()) == 0 },
		60*time.Second, 100*time.Millisecond, "the rotated certificate was never served on gRPC")
	require.Equal(t, next.Serial(), servedSerial(t, ca, a.HTTP), "the HTTP listener serves it too")
	_, reloaded := a.Field("TLS certificate reloaded", "serial")
	require.True(t, reloaded)

	// The node still works with it: a call over a fresh connection.
	_, err := healthpb.NewHealthClient(dialTLS(t, ca, a.GRPC, "")).Check(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
}
