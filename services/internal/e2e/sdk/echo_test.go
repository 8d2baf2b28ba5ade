//go:build e2e

package sdk_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/internal/e2e/e2etest"
)

// echoWorkers are the SDKs' echo examples, each as the command that runs it
// (root is the checkout).
var echoWorkers = map[string]func(t *testing.T, root string) *exec.Cmd{
	"go": func(t *testing.T, root string) *exec.Cmd {
		bin := filepath.Join(t.TempDir(), "echo")
		build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./pkg/worker/examples/echo")
		build.Dir = root
		out, err := build.CombinedOutput()
		require.NoError(t, err, "go build the Go echo worker: %s", out)
		return exec.Command(bin) //nolint:gosec,noctx // our build; stopped with SIGTERM, not a context
	},
	"typescript": func(t *testing.T, root string) *exec.Cmd {
		dir := installed(t.Context(), t, root, "sdk-typescript.sh")
		// The package's bin (switchboard-echo) is this file built; tsx runs
		// the source, so the test needs no build.
		cmd := exec.Command("node", "--import", "tsx", "src/bin/echo.ts") //nolint:noctx // stopped with SIGTERM
		cmd.Dir = dir
		return cmd
	},
	"python": func(t *testing.T, root string) *exec.Cmd {
		out, err := exec.CommandContext(t.Context(), filepath.Join(root, "deploy", "local", "python-sdk.sh")).Output()
		require.NoError(t, err, "deploy/local/python-sdk.sh")
		cmd := exec.Command(strings.TrimSpace(string(out)), "-m", "switchboard_worker.examples.echo") //nolint:gosec,noctx // stopped with SIGTERM
		cmd.Env = []string{"PYTHONPATH=" + filepath.Join(root, "sdk", "python", "src"), "PYTHONDONTWRITEBYTECODE=1"}
		return cmd
	},
}

// TestEchoWorkers: every SDK's echo example, as a process against a real
// node, completes todos with their payload as the result, and on SIGTERM
// releases the todos it holds (PENDING again) and exits 0.
func TestEchoWorkers(t *testing.T) {
	t.Parallel()
	root := e2etest.RepoRoot(t)
	node := e2etest.StartNode(t, pgtest.NewDatabase(t), "echo")
	token := e2etest.AgentToken(t, e2etest.Dial(t, node.GRPC, e2etest.AdminToken), "echo")
	q := queuev1.NewQueueServiceClient(e2etest.Dial(t, node.GRPC, token))
	for lang, command := range echoWorkers {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			enqueue := func(queue string, n int) []int64 {
				ids := make([]int64, n)
				for i := range ids {
					p, err := structpb.NewStruct(map[string]any{"lang": lang, "n": i})
					require.NoError(t, err)
					res, err := q.Enqueue(t.Context(), &queuev1.EnqueueRequest{Queue: queue, Kind: "echo", Payload: p})
					require.NoError(t, err)
					ids[i] = res.GetTodo().GetId()
				}
				return ids
			}
			states := func(ids []int64) map[queuev1.TodoState]int {
				got := map[queuev1.TodoState]int{}
				for _, id := range ids {
					res, err := q.GetTodo(t.Context(), &queuev1.GetTodoRequest{Id: id})
					require.NoError(t, err)
					got[res.GetTodo().GetState()]++
				}
				return got
			}
			run := func(queue string, env ...string) (*exec.Cmd, *bytes.Buffer) {
				cmd := command(t, root)
				cmd.Env = append(append(append(os.Environ(), cmd.Env...), "SWITCHBOARD_QUEUE="+queue,
					"SWITCHBOARD_ADDRS="+node.GRPC, "SWITCHBOARD_TOKEN="+token), env...)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				require.NoError(t, cmd.Start())
				t.Cleanup(func() { _ = cmd.Process.Kill() })
				return cmd, &out
			}
			stop := func(cmd *exec.Cmd, out *bytes.Buffer) {
				require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				select {
				case err := <-done:
					require.NoError(t, err, "the echo worker exits 0 on SIGTERM:\n%s", out)
				case <-time.After(time.Minute):
					t.Fatalf("the echo worker did not exit within a minute of SIGTERM:\n%s", out)
				}
			}

			done := enqueue(lang+"-echo", 5)
			cmd, out := run(lang + "-echo")
			require.Eventually(t, func() bool { return states(done)[queuev1.TodoState_TODO_STATE_COMPLETED] == 5 },
				time.Minute, 20*time.Millisecond, "%s", out)
			for i, id := range done {
				res, err := q.GetTodo(t.Context(), &queuev1.GetTodoRequest{Id: id})
				require.NoError(t, err)
				require.Equal(t, map[string]any{"lang": lang, "n": float64(i)}, res.GetTodo().GetResult().AsMap(), "the result is the payload")
			}
			stop(cmd, out)

			held := enqueue(lang+"-held", 3)
			cmd, out = run(lang+"-held", "SWITCHBOARD_ECHO_DELAY_MS=600000", "SWITCHBOARD_LEASE_SECONDS=60")
			require.Eventually(t, func() bool { return states(held)[queuev1.TodoState_TODO_STATE_RUNNING] == 3 },
				time.Minute, 20*time.Millisecond, "%s", out)
			stop(cmd, out)
			require.Equal(t, map[queuev1.TodoState]int{queuev1.TodoState_TODO_STATE_PENDING: 3}, states(held),
				"SIGTERM released the held todos:\n%s", out)
		})
	}
}
