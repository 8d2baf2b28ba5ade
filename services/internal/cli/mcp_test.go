//go:build integration

package cli

import (
	"context"
	"encoding/json"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/node"
)

// `switchboard mcp` in-process over pipes, driven by the SDK's client
// against a live node: the tools are listed, a todo enqueued over gRPC is
// claimed, completed and read back with the SWITCHBOARD_TOKEN credential,
// and a wrong token gets the API's UNAUTHENTICATED as a tool error.
func TestMCPOverStdio(t *testing.T) {
	t.Parallel()
	n, token := serveAll(t)
	conn, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(auth.Bearer{Token: token, AllowInsecure: true}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	enq, err := queuev1.NewQueueServiceClient(conn).Enqueue(t.Context(), &queuev1.EnqueueRequest{Queue: "stdio-q", Kind: "resize"})
	require.NoError(t, err)
	todoID := strconv.FormatInt(enq.GetTodo().GetId(), 10)

	s := stdioSession(t, n.GRPCAddr(), token)
	tools, err := s.ListTools(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 12)
	claimed := callTool(t, s, "claim_todo", map[string]any{"queue": "stdio-q", "wait_seconds": 1})
	todos := claimed["todos"].([]any)
	require.Len(t, todos, 1)
	todo := todos[0].(map[string]any)
	require.Equal(t, todoID, todo["id"])
	callTool(t, s, "complete_todo", map[string]any{"id": todoID, "lease_token": todo["lease_token"]})
	require.Equal(t, "TODO_STATE_COMPLETED", callTool(t, s, "get_todo", map[string]any{"id": todoID})["state"])

	wrong, _, err := auth.NewToken()
	require.NoError(t, err)
	res, err := stdioSession(t, n.GRPCAddr(), wrong).CallTool(t.Context(),
		&mcp.CallToolParams{Name: "get_todo", Arguments: map[string]any{"id": todoID}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Equal(t, "UNAUTHENTICATED: missing or invalid credentials", res.Content[0].(*mcp.TextContent).Text)
}

// stdioSession runs mcpCmd on pipes with token in SWITCHBOARD_TOKEN and
// connects the SDK's client to it; cleanup ends both and waits for mcpCmd.
func stdioSession(t *testing.T, addr, token string) *mcp.ClientSession {
	t.Helper()
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	env := func(k string) (string, bool) { return token, k == envMCPToken }
	done := make(chan error, 1)
	go func() {
		done <- mcpCmd(context.WithoutCancel(t.Context()), []string{"--addr", addr}, serverIn, serverOut, env)
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "switchboard-test", Version: "1"}, nil)
	s, err := c.Connect(t.Context(), &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = s.Close() // closes the client's ends: the server reads EOF
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("switchboard mcp did not return after its client left")
		}
	})
	return s
}

func callTool(t *testing.T, s *mcp.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, name)
	body := res.Content[0].(*mcp.TextContent).Text
	require.False(t, res.IsError, "%s: %s", name, body)
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	return out
}

// serveAll runs `serve all` in-process on a fresh database and returns the
// node and its bootstrap administrator's token.
func serveAll(t *testing.T) (*node.Node, string) {
	t.Helper()
	cfg := config.Default()
	cfg.Cluster.NodeID = "cli-mcp-test"
	// Pools of a test's size: the server's connections are shared with
	// the tests running in parallel (pgtest.NodeURL).
	cfg.Postgres.URL = pgtest.NodeURL(pgtest.NewDatabase(t))
	token, _, err := auth.NewToken()
	require.NoError(t, err)
	cfg.Auth.BootstrapToken = token
	cfg.GRPC.Addr, cfg.HTTP.Addr, cfg.Cluster.Endpoint = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.Shutdown.Grace = 5 * time.Second
	svcs, err := node.ParseServices("all")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	n, err := node.New(ctx, cfg, zap.NewNop(), svcs)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(time.Minute):
			t.Error("node did not stop within a minute")
		}
	})
	conn, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	hc := healthpb.NewHealthClient(conn)
	require.Eventually(t, func() bool {
		resp, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{})
		return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
	}, 30*time.Second, 20*time.Millisecond, "node never reported SERVING")
	return n, token
}
