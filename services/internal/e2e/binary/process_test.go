//go:build e2e

package binary_test

import (
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/switchboard/switchboard/migrations"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/internal/e2e/e2etest"
)

// Two nodes booting at the same instant against an empty database: goose's
// advisory lock lets one migrate while the other waits, and both serve.
func TestTwoNodesBootTogetherOnAnEmptyDatabase(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmptyDatabase(t)
	// Started back to back: both are connecting and racing for the
	// migration lock long before either could finish migrating.
	procs := []*e2etest.Process{
		e2etest.Start(t, append(e2etest.BaseEnv(db), "CLUSTER_NODE_ID=boot-a"), "serve", "all"),
		e2etest.Start(t, append(e2etest.BaseEnv(db), "CLUSTER_NODE_ID=boot-b"), "serve", "all"),
	}

	total := 0
	addrs := map[string]bool{}
	for _, p := range procs {
		addr, _ := p.WaitField(t, "gRPC listening", "addr").(string)
		addrs[addr] = true
		e2etest.WaitServing(t, addr)
		applied, ok := p.WaitField(t, "schema current", "migrations_applied").(float64)
		require.True(t, ok)
		total += int(applied)
	}
	require.Len(t, addrs, 2, "different ports")
	require.Equal(t, int(migrations.Latest()), total, "the migrations were applied exactly once between the two")

	for _, p := range procs {
		code, _ := p.SignalAndWait(t, syscall.SIGTERM, time.Minute)
		require.Equal(t, 0, code, p.Output())
	}
}

// SIGTERM drains and exits 0 well within the grace period, even with a
// server stream open through the gateway. The grace is far longer than the
// test may take, so exiting at all shows the stream did not hold shutdown
// hostage (it would be forced closed only at the grace): no bound on how
// long a clean exit takes on a loaded machine is needed.
func TestSIGTERMExitsZeroWithinGrace(t *testing.T) {
	t.Parallel()
	const grace = 10 * time.Minute
	p := e2etest.Start(t, append(e2etest.BaseEnv(pgtest.NewDatabase(t)), "SWITCHBOARD_SHUTDOWN_GRACE="+grace.String()), "serve", "all")
	grpcAddr, _ := p.WaitField(t, "gRPC listening", "addr").(string)
	httpAddr, _ := p.WaitField(t, "HTTP listening", "addr").(string)
	e2etest.WaitServing(t, grpcAddr)

	// A long-lived stream (health Watch) must not hold shutdown hostage.
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	watch, err := healthpb.NewHealthClient(conn).Watch(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = watch.Recv()
	require.NoError(t, err)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+httpAddr+"/health", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, resp.Body.Close())

	code, took := p.SignalAndWait(t, syscall.SIGTERM, 2*time.Minute)
	require.Equal(t, 0, code, p.Output())
	require.Less(t, took, grace, "exit within SWITCHBOARD_SHUTDOWN_GRACE")
	require.Contains(t, p.Output(), `"msg":"stopped cleanly"`)
}

func TestBadConfigFailsWithOneLineNamingTheVariable(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"CLUSTER_HEARTBEAT_INTERVAL=soon": "CLUSTER_HEARTBEAT_INTERVAL",
		"SWITCHBOARD_LOG_FORMAT=xml":      "SWITCHBOARD_LOG_FORMAT",
		"DATABASE_URL=mysql://x/y":        "DATABASE_URL",
		"SWITCHBOARD_GRPC_ADDR=nonsense":  "SWITCHBOARD_GRPC_ADDR",
	}
	for kv, name := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), e2etest.Binary(), "serve", "all") //nolint:gosec // our own binary
			cmd.Env = append(e2etest.BaseEnv("postgres://postgres@127.0.0.1:1/none"), kv)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			require.Equal(t, 1, exit.ExitCode())
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			require.Len(t, lines, 1, "one line: %s", out)
			require.Contains(t, lines[0], name)
		})
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"frobnicate"}, {"serve", "queue,billing"}, {"migrate", "sideways"}} {
		cmd := exec.CommandContext(t.Context(), e2etest.Binary(), args...) //nolint:gosec // our own binary
		cmd.Env = e2etest.BaseEnv(pgtest.DefaultURL)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%v", args)
		require.Equal(t, 2, exit.ExitCode(), "%v: %s", args, out)
	}
}

func TestMigrateUpIsIdempotentAndStatusLists(t *testing.T) {
	t.Parallel()
	env := e2etest.BaseEnv(pgtest.NewEmptyDatabase(t))
	run := func(args ...string) string {
		cmd := exec.CommandContext(t.Context(), e2etest.Binary(), args...) //nolint:gosec // our own binary
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%v: %s", args, out)
		return string(out)
	}
	status := run("migrate", "status")
	require.Contains(t, status, "pending")
	first := run("migrate", "up")
	require.Contains(t, first, fmt.Sprintf("applied %d migration(s)", migrations.Latest()))
	require.Contains(t, run("migrate", "up"), "applied 0 migration(s)")
	status = run("migrate", "status")
	require.NotContains(t, status, "pending")
	require.Contains(t, status, "00004_registry.sql")
}

func TestVersion(t *testing.T) {
	t.Parallel()
	out, err := exec.CommandContext(t.Context(), e2etest.Binary(), "version").Output() //nolint:gosec // our own binary
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(out), "switchboard "), string(out))
}
