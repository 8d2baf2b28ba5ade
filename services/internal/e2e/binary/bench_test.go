//go:build e2e

package binary_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/internal/e2e/e2etest"
)

// `switchboard bench queue` end to end against a real node: a tenant, an
// agent credential (agent + publisher), then the command enqueues, drains
// and trickles through gRPC and prints one RESULT line. Small sizes: this
// proves the path works; the figures come from a full run (README).
func TestBenchQueueAgainstARealNode(t *testing.T) {
	t.Parallel()
	n := e2etest.StartNode(t, pgtest.NewDatabase(t), "bench-node")
	token := e2etest.AgentToken(t, e2etest.Dial(t, n.GRPC, e2etest.AdminToken), "bench")

	cmd := exec.CommandContext(t.Context(), e2etest.Binary(), "bench", "queue", "--addr", n.GRPC, //nolint:gosec // our own binary
		"--todos", "300", "--workers", "20", "--trickle", "30")
	cmd.Env = []string{"SWITCHBOARD_TOKEN=" + token}
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `(?m)^RESULT jobs_per_s=\d+ claim_p50_ms=\S+ claim_p95_ms=\S+ claim_p99_ms=\S+$`, string(out))
	t.Log(string(out))
}

// `switchboard bench ingest` end to end against a real node: it creates its
// own Standard Webhooks endpoint with the admin token, sends signed
// deliveries over HTTP, and prints one RESULT line. Small sizes again.
func TestBenchIngestAgainstARealNode(t *testing.T) {
	t.Parallel()
	n := e2etest.StartNode(t, pgtest.NewDatabase(t), "bench-ingest-node")
	cmd := exec.CommandContext(t.Context(), e2etest.Binary(), "bench", "ingest", "--url", "http://"+n.HTTP, //nolint:gosec // our own binary
		"--requests", "200", "--concurrency", "4")
	cmd.Env = []string{"SWITCHBOARD_TOKEN=" + e2etest.AdminToken}
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `(?m)^RESULT accepted_per_s=\d+ p50_ms=\S+ p99_ms=\S+$`, string(out))
	t.Log(string(out))
}

// deploy/local/bench-ingest.sh end to end, tiny: its pgbench scripts copy
// the node's own statements into the node's own tables, so a schema change
// the copy misses (a new NOT NULL column, a CHECK) breaks the benchmark
// without any other test noticing. The script fails when pgbench cannot
// store a delivery, or stores an event without its todo. It runs with 4 in
// flight and 2 per statement: the suite's databases share the server's
// connections (100 here), and 32 pgbench clients beside them could not all
// connect.
func TestBenchIngestScriptRunsAgainstTheSchema(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("pgbench")
	require.NoError(t, err, "the script needs pgbench (Debian's postgresql-client)")
	port := func() string {
		lis, err := net.Listen("tcp", "127.0.0.1:0") //nolint:noctx // only to find a free port
		require.NoError(t, err)
		defer func() { require.NoError(t, lis.Close()) }()
		return strconv.Itoa(lis.Addr().(*net.TCPAddr).Port)
	}
	root := e2etest.RepoRoot(t)
	cmd := exec.CommandContext(t.Context(), "bash", filepath.Join(root, "deploy/local/bench-ingest.sh"), "300", "4")
	cmd.Env = append(os.Environ(), "SWITCHBOARD_BIN="+e2etest.Binary(), "PGBENCH_TRANSACTIONS=20", "CEILING_BATCH=2",
		"SWITCHBOARD_BENCH_GRPC="+port(), "SWITCHBOARD_BENCH_HTTP="+port())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `(?m)^RATIO accepted_per_s=[1-9]\d* pgbench_one_tps=[1-9]\d* ratio_one=\S+ `+
		`pgbench_ceiling_tps=[1-9]\d* ratio_ceiling=\S+ p50_ms=\S+ p99_ms=\S+$`, string(out))
}
