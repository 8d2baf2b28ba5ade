//go:build integration

package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/node"
)

// liveNode is a node serving everything on a fresh database, and the
// credentials of one tenant ("the tenant") and of another.
type liveNode struct {
	node *node.Node
	// Tokens of the tenant: its administrator, its agent (scope agent),
	// a read-only one; and the other tenant's administrator.
	admin, agent, reader, stranger string
	agentID                        string
	// tenantID and root mint more of the tenant's credentials.
	tenantID string
	root     adminv1.AdminServiceClient
	// client is the tests' HTTP client of this node; its connections close
	// before the node stops, so none it dialed and never used holds the
	// node's shutdown (net/http waits up to 5 s for such a connection).
	client *http.Client
}

// startNode runs `serve all` in-process and mints the credentials.
func startNode(t *testing.T) *liveNode {
	t.Helper()
	return startNodeWith(t, func(*config.Config) {})
}

// startNodeWith is startNode with the configuration changed by configure.
func startNodeWith(t *testing.T, configure func(*config.Config)) *liveNode {
	t.Helper()
	cfg := config.Default()
	cfg.Cluster.NodeID = "mcp-test"
	// Pools of a test's size: the server's connections are shared with
	// the tests running in parallel (pgtest.NodeURL).
	cfg.Postgres.URL = pgtest.NodeURL(pgtest.NewDatabase(t))
	bootstrap, _, err := auth.NewToken()
	require.NoError(t, err)
	cfg.Auth.BootstrapToken = bootstrap
	cfg.GRPC.Addr, cfg.HTTP.Addr, cfg.Cluster.Endpoint = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	// A bound, not a wait: the node stops as soon as its parts have. Under
	// a saturated CI (make test runs two lanes) a node that had 3 MB bodies
	// in flight (TestBodiesInProgressAreCapped) overran 5 s twice in a row.
	cfg.Shutdown.Grace = 30 * time.Second
	configure(&cfg)
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
	admin := adminv1.NewAdminServiceClient(dialAs(t, n, bootstrap))
	waitServing(t, n)

	tenant := newHuman(t, admin, "tenant@example.com")
	transport := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(transport.CloseIdleConnections) // runs before the node's cleanup: registered after it
	l := &liveNode{node: n, tenantID: tenant, root: admin, client: &http.Client{Transport: transport}}
	l.admin = mint(t, admin, &adminv1.MintCredentialRequest{HumanId: tenant, Scopes: []string{"admin"}})
	a, err := admin.CreateAgent(t.Context(), &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{HumanId: tenant, Name: "mcp-worker"}})
	require.NoError(t, err)
	l.agentID = a.GetAgent().GetId()
	l.agent = mint(t, admin, &adminv1.MintCredentialRequest{HumanId: tenant, AgentId: l.agentID, Scopes: []string{"agent"}})
	l.reader = mint(t, admin, &adminv1.MintCredentialRequest{HumanId: tenant, Scopes: []string{"read"}})
	l.stranger = mint(t, admin, &adminv1.MintCredentialRequest{HumanId: newHuman(t, admin, "stranger@example.com"), Scopes: []string{"admin"}})
	return l
}

// newAgent mints a credential of the tenant for a new agent (scope agent).
func (l *liveNode) newAgent(t *testing.T, name string) string {
	t.Helper()
	a, err := l.root.CreateAgent(t.Context(), &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{HumanId: l.tenantID, Name: name}})
	require.NoError(t, err)
	return mint(t, l.root, &adminv1.MintCredentialRequest{HumanId: l.tenantID, AgentId: a.GetAgent().GetId(), Scopes: []string{"agent"}})
}

// newReader mints another read-only credential of the tenant.
func (l *liveNode) newReader(t *testing.T) string {
	t.Helper()
	return mint(t, l.root, &adminv1.MintCredentialRequest{HumanId: l.tenantID, Scopes: []string{"read"}})
}

func newHuman(t *testing.T, admin adminv1.AdminServiceClient, email string) string {
	t.Helper()
	h, err := admin.CreateHuman(t.Context(), &adminv1.CreateHumanRequest{Human: &adminv1.Human{Email: email}})
	require.NoError(t, err)
	return h.GetHuman().GetId()
}

func mint(t *testing.T, admin adminv1.AdminServiceClient, r *adminv1.MintCredentialRequest) string {
	t.Helper()
	m, err := admin.MintCredential(t.Context(), r)
	require.NoError(t, err)
	return m.GetToken()
}

// dialAs is a gRPC connection to n carrying token.
func dialAs(t *testing.T, n *node.Node, token string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(auth.Bearer{Token: token, AllowInsecure: true}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func waitServing(t *testing.T, n *node.Node) {
	t.Helper()
	conn, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	hc := healthpb.NewHealthClient(conn)
	require.Eventually(t, func() bool {
		resp, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{})
		return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
	}, 30*time.Second, 20*time.Millisecond, "node never reported SERVING")
}

// bearerTransport adds a bearer token to every request it sends through
// base.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// overHTTP is an MCP client session with n's /mcp endpoint as token.
func (l *liveNode) overHTTP(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "switchboard-test", Version: "1"}, nil)
	s, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:   "http://" + l.node.HTTPAddr() + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{token: token, base: l.client.Transport}},
	}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// call calls a tool that must succeed and decodes its structured result.
func call(t *testing.T, s *mcp.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err, tool)
	require.False(t, res.IsError, "%s: %s", tool, text(res))
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(text(res)), &out), tool)
	return out
}

// callFails calls a tool that must fail and returns its error text.
func callFails(t *testing.T, s *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err, tool)
	require.True(t, res.IsError, "%s succeeded: %s", tool, text(res))
	return text(res)
}

func text(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if c, ok := res.Content[0].(*mcp.TextContent); ok {
		return c.Text
	}
	return ""
}
