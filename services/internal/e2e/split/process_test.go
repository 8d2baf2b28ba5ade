//go:build e2e

package split

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/pkg/pgtest/privatepg"
	"github.com/switchboard/switchboard/services/internal/e2e/e2etest"
)

func TestMain(m *testing.M) { e2etest.Main(m) }

// Registry timing of every process: a killed node is swept within about
// two seconds, with room for a loaded machine's late heartbeats.
const (
	heartbeatInterval = 250 * time.Millisecond
	staleThreshold    = 2 * time.Second
)

// proc is one `switchboard serve <service>` process.
type proc struct {
	id, service, grpc, http, log string
	cmd                          *exec.Cmd
	done                         chan struct{}
}

// serve starts `switchboard serve service` as node id on fresh loopback
// ports, logging to a file the test prints when it fails. Nothing tells it
// where the other services are: no SWITCHBOARD_UPSTREAM_* and no
// SWITCHBOARD_GATEWAY_UPSTREAM.
func serve(t *testing.T, dbURL, id, service string) *proc {
	t.Helper()
	gp, err := privatepg.FreePort()
	require.NoError(t, err)
	hp, err := privatepg.FreePort()
	require.NoError(t, err)
	p := &proc{
		id: id, service: service, grpc: fmt.Sprintf("127.0.0.1:%d", gp), http: fmt.Sprintf("127.0.0.1:%d", hp),
		log: filepath.Join(t.TempDir(), id+".log"), done: make(chan struct{}),
	}
	logf, err := os.Create(p.log)
	require.NoError(t, err)
	p.cmd = exec.Command(e2etest.Binary(), "serve", service) //nolint:gosec,noctx // our own binary; the test kills it by signal
	p.cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"DATABASE_URL=" + pgtest.NodeURL(dbURL), // the suite's connection bounds (pgtest.NodePoolConns)
		"SWITCHBOARD_GRPC_ADDR=" + p.grpc,
		"SWITCHBOARD_HTTP_ADDR=" + p.http,
		"SWITCHBOARD_LOG_FORMAT=json",
		"SWITCHBOARD_SHUTDOWN_GRACE=2s",
		"CLUSTER_NODE_ID=" + id,
		"CLUSTER_HEARTBEAT_INTERVAL=" + heartbeatInterval.String(),
		"CLUSTER_STALE_THRESHOLD=" + staleThreshold.String(),
	}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	// Pdeathsig: a test binary killed by its timeout leaves no process behind.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			t.Logf("log of %s (serve %s):\n%s", p.id, p.service, tail(b, 40))
		}
	})
	return p
}

// kill SIGKILLs the process and waits for it to exit.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// tail is the last lines of b.
func tail(b []byte, lines int) string {
	for i := len(b) - 2; i >= 0; i-- {
		if b[i] == '\n' {
			if lines--; lines == 0 {
				return string(b[i+1:])
			}
		}
	}
	return string(b)
}
