//go:build integration

package main_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
)

// Test settings for the registry: heartbeats fast enough for tests; a
// threshold of 15 missed heartbeats (the defaults allow 3: 10s / 30s) so a
// node that a loaded machine starves for a second is not swept as dead, which
// would fail the tests that wait for a live cluster. The tests that kill or
// stop a node wait for the sweep (a condition), so only their duration
// depends on it.
const (
	testInterval = 200 * time.Millisecond
	testStale    = 3 * time.Second
)

type clusterNode struct {
	*process
	id, grpc, http string
}

func startNode(t *testing.T, db, id string, extraEnv ...string) *clusterNode {
	t.Helper()
	p := start(t, append(append(baseEnv(db),
		"CLUSTER_NODE_ID="+id,
		"CLUSTER_HEARTBEAT_INTERVAL="+testInterval.String(),
		"CLUSTER_STALE_THRESHOLD="+testStale.String(),
	), extraEnv...), "serve", "all")
	n := &clusterNode{process: p, id: id}
	n.grpc, _ = p.waitField(t, "gRPC listening", "addr").(string)
	n.http, _ = p.waitField(t, "HTTP listening", "addr").(string)
	waitServing(t, n.grpc)
	return n
}

type healthBody struct {
	Status  string `json:"status"`
	NodeID  string `json:"node_id"`
	Cluster struct {
		Size           int      `json:"size"`
		Peers          []string `json:"peers"`
		HeartbeatAgeMs int      `json:"heartbeat_age_ms"`
	} `json:"cluster"`
}

// getJSON fetches url into v and returns the HTTP status (0 if unreachable).
func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return 0
	}
	return resp.StatusCode
}

func (n *clusterNode) health(t *testing.T) healthBody {
	t.Helper()
	var h healthBody
	getJSON(t, "http://"+n.http+"/health", &h)
	return h
}

// members is the node ids in n's /api/admin/cluster, in seq order.
func (n *clusterNode) members(t *testing.T) []string {
	t.Helper()
	var body struct {
		Data []struct {
			NodeID string `json:"node_id"`
		} `json:"data"`
	}
	if getJSON(t, "http://"+n.http+"/api/admin/cluster", &body) != http.StatusOK {
		return nil
	}
	ids := []string{}
	for _, d := range body.Data {
		ids = append(ids, d.NodeID)
	}
	return ids
}

func (n *clusterNode) waitMembers(t *testing.T, want ...string) time.Duration {
	t.Helper()
	began := time.Now()
	var got []string
	require.Eventually(t, func() bool {
		got = n.members(t)
		return slices.Equal(sorted(got), sorted(want))
	}, 30*time.Second, 20*time.Millisecond, "%s sees %v, want %v", n.id, got, want)
	return time.Since(began)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestSingleNodeClusterOfOne(t *testing.T) {
	t.Parallel()
	a := startNode(t, pgtest.NewDatabase(t), "solo")
	// Healthy is a condition (a heartbeat under 2 intervals old), which a
	// loaded machine can miss now and then: wait for it and check that
	// answer, not a second one.
	var h healthBody
	require.Eventually(t, func() bool { h = a.health(t); return h.Status == "healthy" }, 60*time.Second, 20*time.Millisecond)
	require.Equal(t, "solo", h.NodeID)
	require.Equal(t, 1, h.Cluster.Size)
	require.Empty(t, h.Cluster.Peers)
	require.Less(t, h.Cluster.HeartbeatAgeMs, int(testStale.Milliseconds()))
}

// The registry design's lifecycle, with real processes sharing one database.
func TestThreeNodeMembership(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	a, b, c := startNode(t, db, "node-a"), startNode(t, db, "node-b"), startNode(t, db, "node-c")
	all := []*clusterNode{a, b, c}
	for _, n := range all {
		n.waitMembers(t, "node-a", "node-b", "node-c")
	}
	for _, n := range all {
		var others []string
		for _, o := range all {
			if o != n {
				others = append(others, o.id)
			}
		}
		// /health has its own view of the registry: wait for it to show
		// the cluster too (it does not, for a moment, after a late beat).
		var h healthBody
		require.Eventually(t, func() bool {
			h = n.health(t)
			return h.Cluster.Size == 3 && slices.Equal(sorted(others), sorted(h.Cluster.Peers))
		}, 60*time.Second, 20*time.Millisecond, "%s", n.id)
		require.Equal(t, 3, h.Cluster.Size, n.id)
		require.ElementsMatch(t, others, h.Cluster.Peers, n.id)
	}

	t.Log("SIGKILL node-c: the others sweep it")
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGKILL))
	took := a.waitMembers(t, "node-a", "node-b")
	t.Logf("node-c disappeared %s after SIGKILL (interval %s, threshold %s)", took, testInterval, testStale)
	b.waitMembers(t, "node-a", "node-b")

	t.Log("SIGSTOP node-b past the threshold, then SIGCONT: it finds itself evicted and exits non-zero")
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGSTOP))
	a.waitMembers(t, "node-a")
	code, _ := b.signalAndWait(t, syscall.SIGCONT, time.Minute)
	require.NotEqual(t, 0, code, b.output())
	require.Contains(t, b.output(), "a peer swept it")

	t.Log("restart node-b under the same id: it re-registers, no orphan row")
	b2 := startNode(t, db, "node-b")
	a.waitMembers(t, "node-a", "node-b")
	b2.waitMembers(t, "node-a", "node-b")

	t.Log("SIGTERM node-a: it deregisters and peers see it leave at once")
	code, _ = a.signalAndWait(t, syscall.SIGTERM, time.Minute)
	require.Equal(t, 0, code, a.output())
	require.Equal(t, []string{"node-b"}, b2.members(t), "a graceful stop deregisters without waiting for a sweep")
}

// A crash restart of Postgres empties the UNLOGGED node_registry under every
// node. That is not an eviction: nodes re-register in place and keep running.
func TestPostgresCrashRestartReRegistersEveryNode(t *testing.T) {
	t.Parallel()
	began := time.Now()
	pg := startPrivatePostgres(t)
	a, b := startNode(t, pg.url, "pg-a"), startNode(t, pg.url, "pg-b")
	a.waitMembers(t, "pg-a", "pg-b")
	t.Logf("cluster up after %s", time.Since(began))

	pg.run(t, "crash-restart")
	t.Logf("postgres restarted after %s", time.Since(began))
	a.waitMembers(t, "pg-a", "pg-b")
	b.waitMembers(t, "pg-a", "pg-b")
	t.Logf("both re-registered after %s", time.Since(began))
	require.False(t, a.exited(), a.output())
	require.False(t, b.exited(), b.output())
	require.Contains(t, a.output(), "re-registering")
	for _, n := range []*clusterNode{a, b} {
		require.Eventually(t, func() bool { return n.health(t).Status == "healthy" }, 60*time.Second, 20*time.Millisecond)
	}
}

type privatePostgres struct {
	env []string
	url string
}

// startPrivatePostgres starts a Postgres cluster of the test's own (the
// shared server must never be restarted) through deploy/local/postgres.sh.
func startPrivatePostgres(t *testing.T) *privatePostgres {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0") //nolint:noctx // only to find a free port
	require.NoError(t, err)
	port := lis.Addr().(*net.TCPAddr).Port
	require.NoError(t, lis.Close())
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	// Under /var/tmp: the postgres system user (root runs the cluster as it)
	// cannot enter t.TempDir().
	data := "/var/tmp/sbtest-pg-" + hex.EncodeToString(suffix[:])
	pg := &privatePostgres{env: append(os.Environ(),
		"SWITCHBOARD_PG_PRIVATE=1",
		"SWITCHBOARD_PG_PORT="+strconv.Itoa(port),
		"SWITCHBOARD_PG_DATA="+data,
		"DATABASE_URL=",
	)}
	t.Cleanup(func() {
		pg.run(t, "stop")
		_ = os.RemoveAll(data)
	})
	pg.run(t, "ensure")
	pg.url = "postgres://postgres@127.0.0.1:" + strconv.Itoa(port) + "/switchboard?sslmode=disable"
	return pg
}

func (pg *privatePostgres) run(t *testing.T, action string) {
	t.Helper()
	// WithoutCancel: "stop" runs in Cleanup, after t.Context() is done.
	cmd := exec.CommandContext(context.WithoutCancel(t.Context()), "bash", filepath.Join(repoRoot(t), "deploy/local/postgres.sh"), action) //nolint:gosec // our script
	cmd.Env = pg.env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "postgres.sh %s: %s", action, out)
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "go.work not found above the test")
		dir = parent
	}
}
