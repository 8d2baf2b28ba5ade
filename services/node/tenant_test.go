//go:build integration

package node_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/auth"
)

// An administrator's todo lands in its own tenant unless the REST call names
// another with X-Switchboard-Tenant (forwarded by the gateway); then the
// named tenant's agent claims it.
func TestAdministratorEnqueuesInTheNamedTenant(t *testing.T) {
	t.Parallel()
	b := setup(t, "all")
	admin := adminv1.NewAdminServiceClient(b.conn)
	h, err := admin.CreateHuman(t.Context(), &adminv1.CreateHumanRequest{Human: &adminv1.Human{Email: "ada@example.com"}})
	require.NoError(t, err)
	human := h.GetHuman().GetId()
	a, err := admin.CreateAgent(t.Context(), &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{HumanId: human, Name: "builder"}})
	require.NoError(t, err)
	m, err := admin.MintCredential(t.Context(), &adminv1.MintCredentialRequest{
		HumanId: human, AgentId: a.GetAgent().GetId(), Scopes: []string{"agent"},
	})
	require.NoError(t, err)

	enqueue := func(tenant string) string {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost,
			"http://"+b.node.HTTPAddr()+"/api/queues/builds/todos", strings.NewReader(`{"kind":"build"}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+b.token)
		if tenant != "" {
			req.Header.Set("X-Switchboard-Tenant", tenant)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var out struct {
			Todo struct {
				HumanID string `json:"human_id"`
			} `json:"todo"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return out.Todo.HumanID
	}
	require.NotEqual(t, human, enqueue(""), "unnamed: the administrator's own tenant")
	require.Equal(t, human, enqueue(human), "named: the tenant")

	conn, err := grpc.NewClient(b.node.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(auth.Bearer{Token: m.GetToken(), AllowInsecure: true}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	claimed, err := queuev1.NewQueueServiceClient(conn).Claim(t.Context(), &queuev1.ClaimRequest{Queue: "builds", WorkerId: "w1", MaxTodos: 10})
	require.NoError(t, err)
	require.Len(t, claimed.GetTodos(), 1, "the agent sees the todo named into its tenant, not the administrator's")
}

// Served is closed once the node reports SERVING and every part has started
// (`serve --announce` prints its addresses then): the HTTP edge answers.
func TestServedClosesOnceServing(t *testing.T) {
	t.Parallel()
	b := setup(t, "all") // returns once grpc.health.v1 says SERVING
	select {
	case <-b.node.Served():
	case <-time.After(30 * time.Second):
		t.Fatal("SERVING reported but Served never closed")
	}
	code, status := b.health(t)
	require.Equal(t, http.StatusOK, code)
	require.NotEqual(t, "unhealthy", status) // degraded when a 100 ms heartbeat runs late on a busy machine
}
