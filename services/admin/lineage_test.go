//go:build integration

package admin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
)

// asCredential is the context of the admin credential c of a tenant.
func asCredential(t *testing.T, c *adminv1.Credential) context.Context {
	t.Helper()
	return auth.NewContext(t.Context(), auth.Principal{
		CredentialID: mustUUID(t, c.GetId()), HumanID: mustUUID(t, c.GetHumanId()), Scopes: []auth.Scope{auth.ScopeAdmin},
	})
}

// The lineage is in the contract: each credential names the one whose call
// minted it, and a revocation says how many it took with it.
func TestCredentialsShowTheirLineage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	require.Equal(t, callerCredential(e.rootCtx(t)), alice.credential.GetMintedBy(), "minted by the administrator's call")

	asAlice := asCredential(t, alice.credential)
	laptop, err := e.srv.MintCredential(asAlice, &adminv1.MintCredentialRequest{Name: "laptop", Scopes: []string{"admin"}})
	require.NoError(t, err)
	require.Equal(t, alice.credential.GetId(), laptop.GetCredential().GetMintedBy())
	ci, err := e.srv.MintCredential(asCredential(t, laptop.GetCredential()), &adminv1.MintCredentialRequest{Name: "ci", Scopes: []string{"read"}})
	require.NoError(t, err)

	list, err := e.srv.ListCredentials(asAlice, &adminv1.ListCredentialsRequest{})
	require.NoError(t, err)
	parents := map[string]string{}
	for _, c := range list.GetCredentials() {
		parents[c.GetId()] = c.GetMintedBy()
	}
	require.Equal(t, laptop.GetCredential().GetId(), parents[ci.GetCredential().GetId()])

	revoked, err := e.srv.RevokeCredential(asAlice, &adminv1.RevokeCredentialRequest{Id: laptop.GetCredential().GetId()})
	require.NoError(t, err)
	require.EqualValues(t, 1, revoked.GetMintedRevoked(), "ci went with the laptop's credential")
	all, err := e.srv.ListCredentials(asAlice, &adminv1.ListCredentialsRequest{IncludeInactive: true})
	require.NoError(t, err)
	for _, c := range all.GetCredentials() {
		if c.GetId() == ci.GetCredential().GetId() {
			require.NotNil(t, c.GetRevokedAt())
		}
	}

	// The laptop's token, still in a node's cache for a few seconds, mints
	// nothing more.
	_, err = e.srv.MintCredential(asCredential(t, laptop.GetCredential()), &adminv1.MintCredentialRequest{Scopes: []string{"read"}})
	requireCode(t, codes.Unauthenticated, err)
}

// keep_minted retires one token and keeps what it minted: an
// administrator's credential that minted a tenant's first one is revoked
// without taking the tenant's credentials with it.
func TestRevokeKeepingMinted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	root := e.rootCtx(t)
	alice := e.seedTenant(t, "alice")
	require.Equal(t, callerCredential(root), alice.credential.GetMintedBy())

	revoked, err := e.srv.RevokeCredential(root, &adminv1.RevokeCredentialRequest{Id: callerCredential(root), KeepMinted: true})
	require.NoError(t, err)
	require.NotNil(t, revoked.GetCredential().GetRevokedAt())
	require.Zero(t, revoked.GetMintedRevoked())
	list, err := e.srv.ListCredentials(asCredential(t, alice.credential), &adminv1.ListCredentialsRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetCredentials(), 1, "alice's credential is still live")
	require.Empty(t, list.GetCredentials()[0].GetMintedBy(), "handed to the administrator credential's minter: none")
}

// requireLimit asserts RESOURCE_EXHAUSTED naming the setting and its field.
func requireLimit(t *testing.T, err error, field string) {
	t.Helper()
	requireCode(t, codes.ResourceExhausted, err)
	st, _ := apierr.ToStatus(err)
	require.Contains(t, st.Message(), "tenant.limits")
	require.Contains(t, st.Message(), field)
}

// tenant.limits applies through the API, to administrators acting on the
// tenant as well, and a raised limit applies at once.
func TestTenantLimitsHoldThroughTheAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice") // one agent, one credential
	_, err := e.pool.Exec(t.Context(), `UPDATE settings SET value = '{"max_agents": 1, "max_credentials": 3, "max_endpoints": 10,
		"max_adapters": 1, "max_schedules": 10}' WHERE key = 'tenant.limits'`)
	require.NoError(t, err)
	asAlice := e.asTenant(t, mustUUID(t, alice.human.GetId())) // the second live credential
	root := e.rootCtx(t)

	_, err = e.srv.CreateAgent(asAlice, &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{Name: "second"}})
	requireLimit(t, err, "max_agents")
	_, err = e.srv.CreateAgent(root, &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{HumanId: alice.human.GetId(), Name: "second"}})
	requireLimit(t, err, "max_agents")

	_, err = e.srv.MintCredential(asAlice, &adminv1.MintCredentialRequest{Scopes: []string{"read"}})
	require.NoError(t, err, "the third")
	_, err = e.srv.MintCredential(root, &adminv1.MintCredentialRequest{HumanId: alice.human.GetId(), Scopes: []string{"read"}})
	requireLimit(t, err, "max_credentials")

	_, err = e.pool.Exec(t.Context(), `UPDATE settings SET value = value || '{"max_agents": 2}' WHERE key = 'tenant.limits'`)
	require.NoError(t, err)
	_, err = e.srv.CreateAgent(asAlice, &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{Name: "second"}})
	require.NoError(t, err, "a raised limit applies to the next call")
}
