//go:build e2e

package e2etest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
)

// Process is a running `switchboard` with its JSON log lines collected.
type Process struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs []map[string]any
	raw  bytes.Buffer
	done chan struct{}
}

// BaseEnv is the environment of a node on dbURL: loopback listeners on free
// ports, JSON logs (the tests read them), and AdminToken stored as the
// bootstrap administrator's.
func BaseEnv(dbURL string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"DATABASE_URL=" + dbURL,
		"SWITCHBOARD_GRPC_ADDR=127.0.0.1:0",
		"SWITCHBOARD_HTTP_ADDR=127.0.0.1:0",
		"SWITCHBOARD_LOG_FORMAT=json",
		"SWITCHBOARD_LOG_LEVEL=info",
		"SWITCHBOARD_SHUTDOWN_GRACE=10s",
		"SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN=" + AdminToken,
	}
}

// Start runs the binary with env and args; the test's cleanup kills it. A
// `serve` gets its DATABASE_URL through pgtest.NodeURL: a node's production
// pool sizes, times the nodes a package starts at once, would take more of a
// shared server's connections than the suite may hold.
func Start(t *testing.T, env []string, args ...string) *Process {
	t.Helper()
	if len(args) > 0 && args[0] == "serve" {
		env = slices.Clone(env)
		for i, kv := range env {
			if u, ok := strings.CutPrefix(kv, "DATABASE_URL="); ok {
				env[i] = "DATABASE_URL=" + pgtest.NodeURL(u)
			}
		}
	}
	// Not CommandContext (which kills): tests send signals themselves and
	// Cleanup kills whatever is left.
	p := &Process{cmd: exec.Command(Binary(), args...), done: make(chan struct{})} //nolint:gosec,noctx // our own binary
	p.cmd.Env = env
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	go p.collect(stderr)
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *Process) collect(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line map[string]any
		p.mu.Lock()
		p.raw.Write(sc.Bytes())
		p.raw.WriteByte('\n')
		if json.Unmarshal(sc.Bytes(), &line) == nil {
			p.logs = append(p.logs, line)
		}
		p.mu.Unlock()
	}
	_ = p.cmd.Wait()
	close(p.done)
}

// Field returns the value of key in the first log line whose msg is msg.
func (p *Process) Field(msg, key string) (any, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.logs {
		if l["msg"] == msg {
			v, ok := l[key]
			return v, ok
		}
	}
	return nil, false
}

// Output is everything the process wrote to stderr so far.
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.raw.String()
}

// WaitField waits for a log line msg carrying key and returns its value.
func (p *Process) WaitField(t *testing.T, msg, key string) any {
	t.Helper()
	var v any
	require.Eventually(t, func() bool {
		var ok bool
		v, ok = p.Field(msg, key)
		return ok || p.Exited()
	}, 60*time.Second, 10*time.Millisecond)
	require.NotNil(t, v, "process never logged %q with %q; output:\n%s", msg, key, p.Output())
	return v
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Done is closed once the process has ended and its output is read.
func (p *Process) Done() <-chan struct{} { return p.done }

// Signal sends sig to the process and does not wait.
func (p *Process) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// SignalAndWait sends sig and returns the exit code and how long exit took.
func (p *Process) SignalAndWait(t *testing.T, sig syscall.Signal, limit time.Duration) (int, time.Duration) {
	t.Helper()
	began := time.Now()
	require.NoError(t, p.cmd.Process.Signal(sig))
	select {
	case <-p.done:
	case <-time.After(limit):
		t.Fatalf("process did not exit within %s after %s; output:\n%s", limit, sig, p.Output())
	}
	return p.cmd.ProcessState.ExitCode(), time.Since(began)
}
