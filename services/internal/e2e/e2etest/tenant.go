//go:build e2e

package e2etest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/auth"
)

// Dial is a plaintext gRPC client of addr calling with token; the test's
// cleanup closes it.
func Dial(t *testing.T, addr, token string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(auth.Bearer{Token: token, AllowInsecure: true}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// AgentToken creates a tenant (a human, name@example.com) and its agent
// name over admin, a connection carrying an administrator's token, and
// mints the agent a credential with scopes agent and publisher.
func AgentToken(t *testing.T, admin *grpc.ClientConn, name string) string {
	t.Helper()
	c := adminv1.NewAdminServiceClient(admin)
	h, err := c.CreateHuman(t.Context(), &adminv1.CreateHumanRequest{Human: &adminv1.Human{Email: name + "@example.com"}})
	require.NoError(t, err)
	a, err := c.CreateAgent(t.Context(), &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{HumanId: h.GetHuman().GetId(), Name: name}})
	require.NoError(t, err)
	cred, err := c.MintCredential(t.Context(), &adminv1.MintCredentialRequest{
		HumanId: h.GetHuman().GetId(), AgentId: a.GetAgent().GetId(), Scopes: []string{"agent", "publisher"},
	})
	require.NoError(t, err)
	return cred.GetToken()
}
