//go:build integration

package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/auth"
)

// binary is the switchboard binary built once for this package's tests.
var binary string

// adminToken is stored by every node these tests start
// (SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN), so tests can call admin routes.
var adminToken = func() string {
	tok, _, err := auth.NewToken()
	if err != nil {
		panic(err)
	}
	return tok
}()

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "switchboard-e2e-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "switchboard")
	build := exec.CommandContext(context.Background(), "go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		panic("build switchboard: " + err.Error())
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// process is a running `switchboard` with its JSON log lines collected.
type process struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs []map[string]any
	raw  bytes.Buffer
	done chan struct{}
	err  error
}

func baseEnv(dbURL string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"DATABASE_URL=" + dbURL,
		"SWITCHBOARD_GRPC_ADDR=127.0.0.1:0",
		"SWITCHBOARD_HTTP_ADDR=127.0.0.1:0",
		"SWITCHBOARD_LOG_FORMAT=json",
		"SWITCHBOARD_LOG_LEVEL=info",
		"SWITCHBOARD_SHUTDOWN_GRACE=10s",
		"SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN=" + adminToken,
	}
}

func start(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	// Not CommandContext (which kills): tests send signals themselves and
	// Cleanup kills whatever is left.
	p := &process{cmd: exec.Command(binary, args...), done: make(chan struct{})} //nolint:gosec,noctx // our own binary
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

func (p *process) collect(r io.Reader) {
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
	p.err = p.cmd.Wait()
	close(p.done)
}

// field returns the value of key in the first log line whose msg is msg.
func (p *process) field(msg, key string) (any, bool) {
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

func (p *process) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.raw.String()
}

// waitField waits for a log line msg carrying key and returns its value.
func (p *process) waitField(t *testing.T, msg, key string) any {
	t.Helper()
	var v any
	require.Eventually(t, func() bool {
		var ok bool
		v, ok = p.field(msg, key)
		return ok || p.exited()
	}, 60*time.Second, 10*time.Millisecond)
	require.NotNil(t, v, "process never logged %q with %q; output:\n%s", msg, key, p.output())
	return v
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signalAndWait sends sig and returns the exit code and how long exit took.
func (p *process) signalAndWait(t *testing.T, sig syscall.Signal, limit time.Duration) (int, time.Duration) {
	t.Helper()
	began := time.Now()
	require.NoError(t, p.cmd.Process.Signal(sig))
	select {
	case <-p.done:
	case <-time.After(limit):
		t.Fatalf("process did not exit within %s after %s; output:\n%s", limit, sig, p.output())
	}
	return p.cmd.ProcessState.ExitCode(), time.Since(began)
}
