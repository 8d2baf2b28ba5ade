//go:build integration

package admin_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/structpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
)

// TestCrossTenantIsolation: an ordinary tenant A, holding the admin scope of
// its own tenant, aims every RPC at tenant B's rows. Each call fails with
// NOT_FOUND (B's row looks missing) or PERMISSION_DENIED (an administrator-
// only RPC), and the database is byte-for-byte unchanged afterwards.
func TestCrossTenantIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.seedTenant(t, "alice")
	b := e.seedTenant(t, "bob")
	ctx := e.asTenant(t, mustUUID(t, a.human.GetId()))
	meta, err := structpb.NewStruct(map[string]any{"owned": "by alice"})
	require.NoError(t, err)
	before := snapshot(t.Context(), t, e.pool)

	cases := []struct {
		name string
		want codes.Code
		call func() error
	}{
		{"GetHuman", codes.NotFound, func() error {
			_, err := e.srv.GetHuman(ctx, &adminv1.GetHumanRequest{Id: b.human.GetId()})
			return err
		}},
		{"UpdateHuman display_name", codes.NotFound, func() error {
			_, err := e.srv.UpdateHuman(ctx, &adminv1.UpdateHumanRequest{Human: &adminv1.Human{Id: b.human.GetId(), DisplayName: "pwned"}})
			return err
		}},
		{"UpdateHuman email", codes.NotFound, func() error {
			_, err := e.srv.UpdateHuman(ctx, &adminv1.UpdateHumanRequest{
				Human: &adminv1.Human{Id: b.human.GetId(), Email: "alice@evil.test"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"email"}},
			})
			return err
		}},
		{"UpdateHuman is_admin", codes.PermissionDenied, func() error {
			_, err := e.srv.UpdateHuman(ctx, &adminv1.UpdateHumanRequest{Human: &adminv1.Human{Id: b.human.GetId(), IsAdmin: true}})
			return err
		}},
		{"DeleteHuman", codes.PermissionDenied, func() error {
			_, err := e.srv.DeleteHuman(ctx, &adminv1.DeleteHumanRequest{Id: b.human.GetId()})
			return err
		}},
		{"CreateAgent for B", codes.NotFound, func() error {
			_, err := e.srv.CreateAgent(ctx, &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{HumanId: b.human.GetId(), Name: "implant"}})
			return err
		}},
		{"GetAgent", codes.NotFound, func() error {
			_, err := e.srv.GetAgent(ctx, &adminv1.GetAgentRequest{Id: b.agent.GetId()})
			return err
		}},
		{"UpdateAgent", codes.NotFound, func() error {
			_, err := e.srv.UpdateAgent(ctx, &adminv1.UpdateAgentRequest{Agent: &adminv1.Agent{Id: b.agent.GetId(), Name: "renamed", Metadata: meta}})
			return err
		}},
		{"UpdateAgent disable", codes.NotFound, func() error {
			_, err := e.srv.UpdateAgent(ctx, &adminv1.UpdateAgentRequest{
				Agent: &adminv1.Agent{Id: b.agent.GetId()}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"disabled_at"}},
			})
			return err
		}},
		{"DeleteAgent", codes.NotFound, func() error {
			_, err := e.srv.DeleteAgent(ctx, &adminv1.DeleteAgentRequest{Id: b.agent.GetId()})
			return err
		}},
		{"MintCredential for B's human", codes.NotFound, func() error {
			_, err := e.srv.MintCredential(ctx, &adminv1.MintCredentialRequest{HumanId: b.human.GetId(), Scopes: []string{"admin"}})
			return err
		}},
		{"MintCredential for B's agent", codes.NotFound, func() error {
			_, err := e.srv.MintCredential(ctx, &adminv1.MintCredentialRequest{AgentId: b.agent.GetId(), Scopes: []string{"agent"}})
			return err
		}},
		{"MintCredential for B's agent naming B", codes.NotFound, func() error {
			_, err := e.srv.MintCredential(ctx, &adminv1.MintCredentialRequest{HumanId: b.human.GetId(), AgentId: b.agent.GetId(), Scopes: []string{"agent"}})
			return err
		}},
		{"RevokeCredential", codes.NotFound, func() error {
			_, err := e.srv.RevokeCredential(ctx, &adminv1.RevokeCredentialRequest{Id: b.credential.GetId()})
			return err
		}},
		{"UpdateSetting", codes.PermissionDenied, func() error {
			_, err := e.srv.UpdateSetting(ctx, &adminv1.UpdateSettingRequest{Setting: &adminv1.Setting{Key: "queue.defaults", Description: "x"}})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			requireCode(t, tc.want, tc.call())
			require.Equal(t, before, snapshot(t.Context(), t, e.pool))
		})
	}

	// Lists succeed but never show B's rows, whatever the filters say.
	t.Run("ListHumans", func(t *testing.T) {
		t.Parallel()
		r, err := e.srv.ListHumans(ctx, &adminv1.ListHumansRequest{})
		require.NoError(t, err)
		require.Len(t, r.GetHumans(), 1)
		require.Equal(t, a.human.GetId(), r.GetHumans()[0].GetId())
	})
	t.Run("ListAgents", func(t *testing.T) {
		t.Parallel()
		mine, err := e.srv.ListAgents(ctx, &adminv1.ListAgentsRequest{})
		require.NoError(t, err)
		require.Len(t, mine.GetAgents(), 1)
		require.Equal(t, a.agent.GetId(), mine.GetAgents()[0].GetId())
		theirs, err := e.srv.ListAgents(ctx, &adminv1.ListAgentsRequest{HumanId: b.human.GetId()})
		require.NoError(t, err)
		require.Empty(t, theirs.GetAgents())
	})
	t.Run("ListCredentials", func(t *testing.T) {
		t.Parallel()
		for _, req := range []*adminv1.ListCredentialsRequest{
			{IncludeInactive: true},
			{HumanId: b.human.GetId(), IncludeInactive: true},
			{AgentId: b.agent.GetId(), IncludeInactive: true},
		} {
			r, err := e.srv.ListCredentials(ctx, req)
			require.NoError(t, err)
			for _, c := range r.GetCredentials() {
				require.Equal(t, a.human.GetId(), c.GetHumanId())
			}
		}
	})
	// The same calls from an administrator reach B (so the failures above
	// are tenancy, not broken ids).
	t.Run("administrator reaches B", func(t *testing.T) {
		t.Parallel()
		root := e.rootCtx(t)
		_, err := e.srv.GetHuman(root, &adminv1.GetHumanRequest{Id: b.human.GetId()})
		require.NoError(t, err)
		_, err = e.srv.GetAgent(root, &adminv1.GetAgentRequest{Id: b.agent.GetId()})
		require.NoError(t, err)
		r, err := e.srv.ListCredentials(root, &adminv1.ListCredentialsRequest{HumanId: b.human.GetId()})
		require.NoError(t, err)
		require.Equal(t, []string{b.credential.GetId()}, credentialIDs(r.GetCredentials()))
	})
}
