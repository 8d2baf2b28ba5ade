//go:build integration

package node_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// walkthrough is the README's "The first hour" shell block, between its
// markers.
var walkthrough = regexp.MustCompile("(?s)<!-- walkthrough:begin -->\\s*```sh\\n(.*?)```\\s*<!-- walkthrough:end -->")

// The README's walk-through, run as written (bash -e) against a live node,
// so it cannot rot: only API, GRPC and ADMIN point it at this node instead
// of make run's. It needs curl, jq, openssl and grpcurl (make tools).
func TestReadmeWalkthrough(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	m := walkthrough.FindSubmatch(readme)
	require.NotNil(t, m, "README.md has no walkthrough block")
	for _, tool := range []string{"bash", "curl", "jq", "openssl", "go"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "the walk-through needs %s", tool)
	}

	b := setup(t, "all")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", string(m[1]))
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"API=http://"+b.node.HTTPAddr(), "GRPC="+b.node.GRPCAddr(), "ADMIN="+b.token)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the walk-through failed (grpcurl comes from make tools):\n%s", out)
	text := string(out)
	for what, want := range map[string]string{
		"the enqueued todo":                 `"queue":"builds","state":"TODO_STATE_PENDING"`,
		"the heartbeat's new lease":         `{"leaseExpiresAt":"`,
		"the completion":                    `"state":"TODO_STATE_COMPLETED","attempt":1`,
		"a wrong signature refused":         "401 for a wrong signature",
		"the event with its payload":        `\"pull_request\": {\"number\": 7}`,
		"its todo, waiting for its agent":   `"state":"TODO_STATE_PENDING","agent_id":"`,
		"the subscription's durable replay": `"channel":"builds","kind":"","payload":{"done":true`,
	} {
		require.Contains(t, text, want, what)
	}
}
