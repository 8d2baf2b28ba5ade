//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest/privatepg"
)

// Registry settings of every node: short enough that a node paused for a
// few seconds is swept, long enough that a node of this loaded 2-core
// machine is not swept by accident while Postgres restarts or the CPU is
// saturated (the defaults are 10 s / 30 s, the same ratio-ish).
const (
	heartbeatInterval = 500 * time.Millisecond
	staleThreshold    = 3 * time.Second
)

// node is one `switchboard serve all` process. Its ports are fixed for its
// whole life, restarts included, so the workers' address list stays true
// (as a Kubernetes Service or a fixed host:port would).
type node struct {
	id, grpc, http string
	env            []string
	logPath        string

	cmd  *exec.Cmd
	done chan struct{} // closed when the current process exited
	code int           // its exit code, once done
	runs int
}

func newNode(t *testing.T, id, dbURL string) *node {
	t.Helper()
	gp, err := privatepg.FreePort()
	require.NoError(t, err)
	hp, err := privatepg.FreePort()
	require.NoError(t, err)
	n := &node{
		id:      id,
		grpc:    fmt.Sprintf("127.0.0.1:%d", gp),
		http:    fmt.Sprintf("127.0.0.1:%d", hp),
		logPath: filepath.Join(logDir, t.Name()+"-"+id+".log"),
	}
	n.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"DATABASE_URL=" + dbURL,
		"SWITCHBOARD_GRPC_ADDR=" + n.grpc,
		"SWITCHBOARD_HTTP_ADDR=" + n.http,
		"SWITCHBOARD_LOG_FORMAT=json",
		"SWITCHBOARD_LOG_LEVEL=info",
		"SWITCHBOARD_SHUTDOWN_GRACE=5s",
		"CLUSTER_NODE_ID=" + id,
		"CLUSTER_HEARTBEAT_INTERVAL=" + heartbeatInterval.String(),
		"CLUSTER_STALE_THRESHOLD=" + staleThreshold.String(),
	}
	n.start(t)
	t.Cleanup(func() { n.signal(syscall.SIGKILL); n.wait(10 * time.Second) })
	return n
}

// start runs the node in its own process group (the faults signal the
// group) with its log appended to logPath.
func (n *node) start(t *testing.T) {
	t.Helper()
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	n.cmd = exec.Command(binary, "serve", "all") //nolint:gosec,noctx // our own binary; the faults signal it, not a context
	n.cmd.Env = n.env
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	// Its own group, so a fault reaches every process of it; Pdeathsig, so
	// a test binary killed by its timeout leaves no node behind.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, n.cmd.Start())
	n.runs++
	n.done = make(chan struct{})
	cmd, done := n.cmd, n.done
	go func() {
		_ = cmd.Wait()
		n.code = cmd.ProcessState.ExitCode()
		_ = logf.Close()
		close(done)
	}()
}

// signal sends sig to the node's process group.
func (n *node) signal(sig syscall.Signal) {
	if n.cmd != nil && n.cmd.Process != nil {
		_ = syscall.Kill(-n.cmd.Process.Pid, sig)
	}
}

func (n *node) alive() bool {
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// wait waits up to d for the process to exit and reports whether it did.
func (n *node) wait(d time.Duration) bool {
	select {
	case <-n.done:
		return true
	case <-time.After(d):
		return false
	}
}

// health is the node's GET /health: its status ("healthy", "degraded",
// "unhealthy") and the HTTP code, or "" when it does not answer.
func (n *node) health(ctx context.Context) (string, int) {
	h, code := n.healthBody(ctx)
	return h.Status, code
}

// healthBody is the node's GET /health body: its status and the peers it
// sees in the registry.
type healthBody struct {
	Status  string `json:"status"`
	Cluster struct {
		Peers []string `json:"peers"`
	} `json:"cluster"`
}

func (n *node) healthBody(ctx context.Context) (healthBody, int) {
	var body healthBody
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.http+"/health", nil)
	if err != nil {
		return body, 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return body, 0
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return body, resp.StatusCode
}

// waitHealthy waits until the node reports healthy, and fails the test
// with the node's log tail if it exits or d passes first.
func (n *node) waitHealthy(t *testing.T, d time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	last := ""
	for time.Since(began) < d {
		if !n.alive() {
			t.Fatalf("node %s exited (code %d) while waiting for it to be healthy; log %s:\n%s", n.id, n.code, n.logPath, tail(n.logPath, 30))
		}
		st, code := n.health(t.Context())
		if st == "healthy" && code == http.StatusOK {
			return time.Since(began)
		}
		last = fmt.Sprintf("%q (HTTP %d)", st, code)
		time.Sleep(20 * time.Millisecond) // polling a condition, under the deadline above
	}
	t.Fatalf("node %s not healthy within %s (last %s); log %s:\n%s", n.id, d, last, n.logPath, tail(n.logPath, 30))
	return 0
}

// tail returns the last lines of a log file, for failure messages.
func tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	end := len(b)
	for i := len(b) - 1; i >= 0 && lines >= 0; i-- {
		if b[i] == '\n' {
			lines--
			if lines < 0 {
				return string(b[i+1 : end])
			}
		}
	}
	return string(b)
}
