//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/worker"
)

// Worker settings. The lease is short so that a SIGKILLed worker's todos
// come back within seconds, but it has to outlast a Postgres crash-restart
// with room to spare: an ack can be retried only while its lease may still
// be live (after that the SDK rightly gives it up as Unconfirmed, and the
// todo runs again), and on this 2-core machine the restart takes 3–4 s,
// and 6 s with both cores saturated by other work (the stop, the data
// folder's sync, redo, the end-of-recovery checkpoint). The lease was last
// renewed up to a third of it before the crash (HeartbeatInterval is
// lease/3), so 15 s leaves at least 10 s.
// TestChaosMain checks the outage against that, so a slower restart fails
// as "outage too long for the lease", not as an SDK fault.
const (
	workerLease       = 15
	workerConcurrency = 8
	handlerMin        = 2 * time.Millisecond
	handlerMax        = 20 * time.Millisecond
)

// Environment of a worker child process: the suite's test binary runs
// itself with CHAOS_ROLE=worker (see TestMain), so the workers are real
// processes that can be SIGKILLed, built on the SDK exactly as users are.
const (
	envRole  = "CHAOS_ROLE"
	envAddrs = "CHAOS_ADDRS"
	envToken = "CHAOS_TOKEN"
	envQueue = "CHAOS_QUEUE"
	envID    = "CHAOS_WORKER_ID"
	envOut   = "CHAOS_OUT"
)

// ackLine is one OnAck outcome, a JSON line of the worker's output file.
// The file is written with one unbuffered write per line, so a SIGKILL
// loses nothing that was reported before it.
type ackLine struct {
	Kind    string `json:"k"` // "ack" or "stats"
	ID      int64  `json:"id,omitempty"`
	Attempt int32  `json:"a,omitempty"`
	Outcome string `json:"o,omitempty"`
	Err     string `json:"err,omitempty"`
	// Stats, on "stats" lines: written every 100 ms and when Run returned
	// (Final), so a killed worker's counters are at most 100 ms old.
	Stats *worker.Stats `json:"stats,omitempty"`
	Final bool          `json:"final,omitempty"`
}

// workerMain is the body of a worker child process.
func workerMain() int {
	out, err := os.OpenFile(os.Getenv(envOut), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var mu sync.Mutex
	emit := func(l ackLine) {
		b, _ := json.Marshal(l)
		mu.Lock()
		_, _ = out.Write(append(b, '\n'))
		mu.Unlock()
	}
	conn, err := worker.Dial(strings.Split(os.Getenv(envAddrs), ","), worker.DialOptions{
		Token: os.Getenv(envToken), AllowInsecure: true, HealthCheck: true,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer conn.Close()
	handler := func(ctx context.Context, _ *queuev1.Todo) error {
		d := handlerMin + rand.N(handlerMax-handlerMin)
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	w := worker.New(conn, os.Getenv(envQueue), handler, worker.Options{
		WorkerID:     os.Getenv(envID),
		Concurrency:  workerConcurrency,
		LeaseSeconds: workerLease,
		Wait:         2 * time.Second,
		// Claims back off at most 500 ms, so a worker whose claims failed
		// through an outage is claiming again soon after it ends.
		BackoffMax: 500 * time.Millisecond,
		OnAck: func(t *queuev1.Todo, o worker.Outcome, err error) {
			l := ackLine{Kind: "ack", ID: t.GetId(), Attempt: t.GetAttempt(), Outcome: o.String()}
			if err != nil {
				l.Err = err.Error()
			}
			emit(l)
		},
	})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				s := w.Stats()
				emit(ackLine{Kind: "stats", Stats: &s})
			}
		}
	}()
	err = w.Run(ctx)
	s := w.Stats()
	emit(ackLine{Kind: "stats", Stats: &s, Final: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

// workerProc is one worker slot: a child process, restarted under a new
// id after each kill (as a supervisor would), each run with its own output.
type workerProc struct {
	name, queue, token string
	addrs              []string
	runs               int
	outs               []string
	cmd                *exec.Cmd
	done               chan struct{}
}

func startWorker(t *testing.T, name, queue, token string, addrs []string) *workerProc {
	t.Helper()
	w := &workerProc{name: name, queue: queue, token: token, addrs: addrs}
	w.start(t)
	t.Cleanup(func() { w.kill(); <-w.done })
	return w
}

func (w *workerProc) start(t *testing.T) {
	t.Helper()
	w.runs++
	id := w.name + "-" + strconv.Itoa(w.runs)
	out := filepath.Join(logDir, t.Name()+"-"+id+".jsonl")
	w.outs = append(w.outs, out)
	logf, err := os.Create(filepath.Join(logDir, t.Name()+"-"+id+".log"))
	require.NoError(t, err)
	w.cmd = exec.Command(os.Args[0], "-test.run=^$") //nolint:gosec,noctx // ourselves, as a worker
	w.cmd.Env = append(os.Environ(), envRole+"=worker", envAddrs+"="+strings.Join(w.addrs, ","),
		envToken+"="+w.token, envQueue+"="+w.queue, envID+"="+id, envOut+"="+out)
	w.cmd.Stdout, w.cmd.Stderr = logf, logf
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, w.cmd.Start())
	w.done = make(chan struct{})
	cmd, done := w.cmd, w.done
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(done) }()
}

// kill SIGKILLs the current run and waits for it to be gone.
func (w *workerProc) kill() {
	_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	<-w.done
}

// restart SIGKILLs the current run and starts the next one.
func (w *workerProc) restart(t *testing.T) {
	t.Helper()
	w.kill()
	w.start(t)
}

// stop asks the current run to shut down gracefully (SIGTERM: it stops
// claiming, finishes or releases what it holds, settles its acks, writes
// its final stats) and waits for it.
func (w *workerProc) stop(t *testing.T, d time.Duration) {
	t.Helper()
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
		require.Equal(t, 0, w.cmd.ProcessState.ExitCode(), "worker %s exited non-zero; see its log in %s", w.name, logDir)
	case <-time.After(d):
		t.Fatalf("worker %s did not stop within %s after SIGTERM", w.name, d)
	}
}
