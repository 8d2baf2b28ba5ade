//go:build e2e

package binary_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
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
	"github.com/switchboard/switchboard/services/internal/e2e/e2etest"
)

func TestSingleNodeClusterOfOne(t *testing.T) {
	t.Parallel()
	a := e2etest.StartNode(t, pgtest.NewDatabase(t), "solo")
	// Healthy is a condition (a heartbeat under 2 intervals old), which a
	// loaded machine can miss now and then: wait for it and check that
	// answer, not a second one.
	var h e2etest.HealthBody
	require.Eventually(t, func() bool { h = a.Health(t); return h.Status == "healthy" }, 60*time.Second, 20*time.Millisecond)
	require.Equal(t, "solo", h.NodeID)
	require.Equal(t, 1, h.Cluster.Size)
	require.Empty(t, h.Cluster.Peers)
	require.Less(t, h.Cluster.HeartbeatAgeMs, int(e2etest.StaleThreshold.Milliseconds()))
}

// The registry design's lifecycle, with real processes sharing one database.
func TestThreeNodeMembership(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	a, b, c := e2etest.StartNode(t, db, "node-a"), e2etest.StartNode(t, db, "node-b"), e2etest.StartNode(t, db, "node-c")
	all := []*e2etest.Node{a, b, c}
	for _, n := range all {
		n.WaitMembers(t, "node-a", "node-b", "node-c")
	}
	for _, n := range all {
		var others []string
		for _, o := range all {
			if o != n {
				others = append(others, o.ID)
			}
		}
		// /health has its own view of the registry: wait for it to show
		// the cluster too (it does not, for a moment, after a late beat).
		var h e2etest.HealthBody
		require.Eventually(t, func() bool {
			h = n.Health(t)
			return h.Cluster.Size == 3 && slices.Equal(e2etest.Sorted(others), e2etest.Sorted(h.Cluster.Peers))
		}, 60*time.Second, 20*time.Millisecond, "%s", n.ID)
		require.Equal(t, 3, h.Cluster.Size, n.ID)
		require.ElementsMatch(t, others, h.Cluster.Peers, n.ID)
	}

	t.Log("SIGKILL node-c: the others sweep it")
	require.NoError(t, c.Signal(syscall.SIGKILL))
	took := a.WaitMembers(t, "node-a", "node-b")
	t.Logf("node-c disappeared %s after SIGKILL (interval %s, threshold %s)", took, e2etest.HeartbeatInterval, e2etest.StaleThreshold)
	b.WaitMembers(t, "node-a", "node-b")

	t.Log("SIGSTOP node-b past the threshold, then SIGCONT: it finds itself evicted and exits non-zero")
	require.NoError(t, b.Signal(syscall.SIGSTOP))
	a.WaitMembers(t, "node-a")
	code, _ := b.SignalAndWait(t, syscall.SIGCONT, time.Minute)
	require.NotEqual(t, 0, code, b.Output())
	require.Contains(t, b.Output(), "a peer swept it")

	t.Log("restart node-b under the same id: it re-registers, no orphan row")
	b2 := e2etest.StartNode(t, db, "node-b")
	a.WaitMembers(t, "node-a", "node-b")
	b2.WaitMembers(t, "node-a", "node-b")

	t.Log("SIGTERM node-a: it deregisters and peers see it leave at once")
	code, _ = a.SignalAndWait(t, syscall.SIGTERM, time.Minute)
	require.Equal(t, 0, code, a.Output())
	require.Equal(t, []string{"node-b"}, b2.Members(t), "a graceful stop deregisters without waiting for a sweep")
}

// A crash restart of Postgres empties the UNLOGGED node_registry under every
// node. That is not an eviction: nodes re-register in place and keep running.
func TestPostgresCrashRestartReRegistersEveryNode(t *testing.T) {
	t.Parallel()
	began := time.Now()
	pg := startPrivatePostgres(t)
	a, b := e2etest.StartNode(t, pg.url, "pg-a"), e2etest.StartNode(t, pg.url, "pg-b")
	a.WaitMembers(t, "pg-a", "pg-b")
	t.Logf("cluster up after %s", time.Since(began))

	pg.run(t, "crash-restart")
	t.Logf("postgres restarted after %s", time.Since(began))
	a.WaitMembers(t, "pg-a", "pg-b")
	b.WaitMembers(t, "pg-a", "pg-b")
	t.Logf("both re-registered after %s", time.Since(began))
	require.False(t, a.Exited(), a.Output())
	require.False(t, b.Exited(), b.Output())
	require.Contains(t, a.Output(), "re-registering")
	for _, n := range []*e2etest.Node{a, b} {
		require.Eventually(t, func() bool { return n.Health(t).Status == "healthy" }, 60*time.Second, 20*time.Millisecond)
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
	cmd := exec.CommandContext(context.WithoutCancel(t.Context()), "bash", filepath.Join(e2etest.RepoRoot(t), "deploy/local/postgres.sh"), action) //nolint:gosec // our script
	cmd.Env = pg.env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "postgres.sh %s: %s", action, out)
}
