//go:build e2e

package mcpinspector_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/internal/e2e/e2etest"
)

// The official MCP Inspector CLI (npm @modelcontextprotocol/inspector-cli,
// pinned in deploy/local/mcp-inspector, installed by its script when
// missing: never skipped) against the /mcp of a `switchboard serve all`
// process: it lists the tools, reads with list_todos, works a todo with
// claim_todo and complete_todo, and reads the event as a resource.
func TestInspectorCLI(t *testing.T) {
	t.Parallel()
	inspector := installInspector(t)
	n := e2etest.StartNode(t, pgtest.NewDatabase(t), "mcp-inspector")
	agent, eventID, todoID := seed(t, n, "inspect-q")
	url := "http://" + n.HTTP + "/mcp"
	run := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		all := append([]string{url, "--transport", "http", "--header", "Authorization: Bearer " + agent}, args...)
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, "node", append([]string{inspector}, all...)...)
		// From its own folder: it looks for its package.json relative to
		// the working directory before importing it relative to itself.
		cmd.Dir = filepath.Dir(inspector)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "inspector %s: %s", strings.Join(args, " "), stderr.String())
		return stdout.Bytes()
	}
	tool := func(name string, args ...string) map[string]any {
		t.Helper()
		all := []string{"--method", "tools/call", "--tool-name", name}
		for _, a := range args {
			all = append(all, "--tool-arg", a)
		}
		var res struct {
			IsError           bool           `json:"isError"`
			StructuredContent map[string]any `json:"structuredContent"`
		}
		out := run(all...)
		require.NoError(t, json.Unmarshal(out, &res), string(out))
		require.False(t, res.IsError, string(out))
		return res.StructuredContent
	}

	var tools struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(run("--method", "tools/list"), &tools))
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	require.ElementsMatch(t, allTools, names)

	todos := tool("list_todos", "queue=inspect-q")["todos"].([]any)
	require.Len(t, todos, 1)
	require.Equal(t, todoID, todos[0].(map[string]any)["id"])
	claimed := tool("claim_todo", "queue=inspect-q", "wait_seconds=1")["todos"].([]any)
	require.Len(t, claimed, 1)
	lease := claimed[0].(map[string]any)["lease_token"].(string)
	// Quoted: the Inspector parses a value as JSON first, and ids are strings.
	done := tool("complete_todo", `id="`+todoID+`"`, `lease_token="`+lease+`"`)
	require.Equal(t, "TODO_STATE_COMPLETED", done["todo"].(map[string]any)["state"])

	var read struct {
		Contents []struct {
			Text string `json:"text"`
		} `json:"contents"`
	}
	require.NoError(t, json.Unmarshal(run("--method", "resources/read", "--uri", "switchboard://events/"+eventID), &read))
	require.Len(t, read.Contents, 1)
	require.Contains(t, read.Contents[0].Text, `"topic":"build.finished"`)
}

// allTools is every tool the MCP server offers (services/mcp's
// TestEveryToolOverHTTP holds the same list).
var allTools = []string{
	"claim_todo", "complete_todo", "fail_todo", "get_event", "get_todo", "heartbeat_todo",
	"list_events", "list_queues", "list_todos", "presence", "publish", "queue_stats",
}

// seed makes a tenant on n: its administrator publishes an event that
// enqueues a todo on queue. It returns a credential of the tenant's agent
// (scope agent) and both ids as the tools show them.
func seed(t *testing.T, n *e2etest.Node, queue string) (agent, eventID, todoID string) {
	t.Helper()
	root := adminv1.NewAdminServiceClient(e2etest.Dial(t, n.GRPC, e2etest.AdminToken))
	h, err := root.CreateHuman(t.Context(), &adminv1.CreateHumanRequest{Human: &adminv1.Human{Email: "tenant@example.com"}})
	require.NoError(t, err)
	tenant := h.GetHuman().GetId()
	admin, err := root.MintCredential(t.Context(), &adminv1.MintCredentialRequest{HumanId: tenant, Scopes: []string{"admin"}})
	require.NoError(t, err)
	a, err := root.CreateAgent(t.Context(), &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{HumanId: tenant, Name: "mcp-worker"}})
	require.NoError(t, err)
	cred, err := root.MintCredential(t.Context(), &adminv1.MintCredentialRequest{
		HumanId: tenant, AgentId: a.GetAgent().GetId(), Scopes: []string{"agent"},
	})
	require.NoError(t, err)

	ingest := ingestv1.NewIngestServiceClient(e2etest.Dial(t, n.GRPC, admin.GetToken()))
	p, err := ingest.PublishEvent(t.Context(), &ingestv1.PublishEventRequest{
		Topic: "build.finished", Payload: []byte(`{"ok":true}`), ContentType: "application/json", Queue: queue,
	})
	require.NoError(t, err)
	return cred.GetToken(), strconv.FormatInt(p.GetEvent().GetId(), 10), strconv.FormatInt(p.GetTodoId(), 10)
}

// installInspector runs deploy/local/mcp-inspector.sh, which installs the
// pinned Inspector CLI when it is missing, and returns its entry point.
func installInspector(t *testing.T) string {
	t.Helper()
	script := filepath.Join(e2etest.RepoRoot(t), "deploy", "local", "mcp-inspector.sh")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, script)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "installing the MCP Inspector CLI: %s", stderr.String())
	return strings.TrimSpace(string(out))
}
