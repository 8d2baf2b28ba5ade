//go:build integration

package admin_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
)

func TestAgentLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))

	// Empty human_id: the caller's own human. Metadata defaults to {}.
	created, err := e.srv.CreateAgent(ctx, &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{
		Id: "ignored", Name: "builder", Description: "builds things",
	}})
	require.NoError(t, err)
	a := created.GetAgent()
	mustUUID(t, a.GetId())
	require.Equal(t, alice.human.GetId(), a.GetHumanId())
	require.Equal(t, "builder", a.GetName())
	require.NotNil(t, a.GetMetadata())
	require.Empty(t, a.GetMetadata().GetFields())
	require.Nil(t, a.GetDisabledAt())

	got, err := e.srv.GetAgent(ctx, &adminv1.GetAgentRequest{Id: a.GetId()})
	require.NoError(t, err)
	require.Equal(t, "builds things", got.GetAgent().GetDescription())

	list, err := e.srv.ListAgents(ctx, &adminv1.ListAgentsRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetAgents(), 2) // the seeded one first, then builder
	require.Equal(t, alice.agent.GetId(), list.GetAgents()[0].GetId())
	require.Equal(t, a.GetId(), list.GetAgents()[1].GetId())

	// A path inside metadata replaces the whole object.
	meta, err := structpb.NewStruct(map[string]any{"team": "infra", "tier": 2})
	require.NoError(t, err)
	upd, err := e.srv.UpdateAgent(ctx, &adminv1.UpdateAgentRequest{
		Agent:      &adminv1.Agent{Id: a.GetId(), Name: "ignored-not-in-mask", Metadata: meta, HumanId: e.root.String()},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"metadata.team"}},
	})
	require.NoError(t, err)
	require.Equal(t, "builder", upd.GetAgent().GetName())
	require.Equal(t, alice.human.GetId(), upd.GetAgent().GetHumanId(), "human_id is immutable")
	require.Equal(t, map[string]any{"team": "infra", "tier": float64(2)}, upd.GetAgent().GetMetadata().AsMap())

	// No mask: non-default fields, here name and disabled_at.
	upd, err = e.srv.UpdateAgent(ctx, &adminv1.UpdateAgentRequest{Agent: &adminv1.Agent{
		Id: a.GetId(), Name: "builder-2", DisabledAt: timestamppb.Now(),
	}})
	require.NoError(t, err)
	require.Equal(t, "builder-2", upd.GetAgent().GetName())
	require.NotNil(t, upd.GetAgent().GetDisabledAt())
	require.Equal(t, "infra", upd.GetAgent().GetMetadata().AsMap()["team"])

	// Named but unset: re-enable, clear metadata to {} and description to "".
	upd, err = e.srv.UpdateAgent(ctx, &adminv1.UpdateAgentRequest{
		Agent:      &adminv1.Agent{Id: a.GetId()},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"disabled_at", "metadata", "description"}},
	})
	require.NoError(t, err)
	require.Nil(t, upd.GetAgent().GetDisabledAt())
	require.Empty(t, upd.GetAgent().GetMetadata().GetFields())
	require.Empty(t, upd.GetAgent().GetDescription())

	// Deleting the agent deletes its credentials.
	minted, err := e.srv.MintCredential(ctx, &adminv1.MintCredentialRequest{AgentId: a.GetId(), Scopes: []string{"agent"}})
	require.NoError(t, err)
	_, err = e.srv.DeleteAgent(ctx, &adminv1.DeleteAgentRequest{Id: a.GetId()})
	require.NoError(t, err)
	require.Zero(t, count(t, e.pool, "SELECT count(*) FROM credentials WHERE id = $1", minted.GetCredential().GetId()))
	_, err = e.srv.GetAgent(ctx, &adminv1.GetAgentRequest{Id: a.GetId()})
	requireCode(t, codes.NotFound, err)
	_, err = e.srv.DeleteAgent(ctx, &adminv1.DeleteAgentRequest{Id: a.GetId()})
	requireCode(t, codes.NotFound, err)
}

func TestAdministratorManagesAnyHumansAgents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bob := e.seedTenant(t, "bob")
	ctx := e.rootCtx(t)

	created, err := e.srv.CreateAgent(ctx, &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{HumanId: bob.human.GetId(), Name: "helper"}})
	require.NoError(t, err)
	require.Equal(t, bob.human.GetId(), created.GetAgent().GetHumanId())

	// Empty filter: every human's agents; a filter narrows to one human.
	all, err := e.srv.ListAgents(ctx, &adminv1.ListAgentsRequest{})
	require.NoError(t, err)
	require.Len(t, all.GetAgents(), 2)
	mine, err := e.srv.ListAgents(ctx, &adminv1.ListAgentsRequest{HumanId: e.root.String()})
	require.NoError(t, err)
	require.Empty(t, mine.GetAgents())

	_, err = e.srv.UpdateAgent(ctx, &adminv1.UpdateAgentRequest{Agent: &adminv1.Agent{Id: bob.agent.GetId(), Description: "by root"}})
	require.NoError(t, err)
	_, err = e.srv.DeleteAgent(ctx, &adminv1.DeleteAgentRequest{Id: created.GetAgent().GetId()})
	require.NoError(t, err)

	// An unknown human is NOT_FOUND, for administrators too.
	_, err = e.srv.CreateAgent(ctx, &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{HumanId: "00000000-0000-4000-8000-000000000000", Name: "x"}})
	requireCode(t, codes.NotFound, err)
}

func TestAgentNameIsUniquePerHuman(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	bob := e.seedTenant(t, "bob")
	ctxA := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	before := snapshot(t.Context(), t, e.pool)

	_, err := e.srv.CreateAgent(ctxA, &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{Name: alice.agent.GetName()}})
	requireCode(t, codes.AlreadyExists, err)
	require.Equal(t, before, snapshot(t.Context(), t, e.pool))

	// Another human may use the same name.
	_, err = e.srv.CreateAgent(e.asTenant(t, mustUUID(t, bob.human.GetId())), &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{Name: alice.agent.GetName()}})
	require.NoError(t, err)

	// Renaming onto a taken name is refused too.
	second, err := e.srv.CreateAgent(ctxA, &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{Name: "second"}})
	require.NoError(t, err)
	before = snapshot(t.Context(), t, e.pool)
	_, err = e.srv.UpdateAgent(ctxA, &adminv1.UpdateAgentRequest{Agent: &adminv1.Agent{Id: second.GetAgent().GetId(), Name: alice.agent.GetName()}})
	requireCode(t, codes.AlreadyExists, err)
	require.Equal(t, before, snapshot(t.Context(), t, e.pool))
}

func TestAgentValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	big, err := structpb.NewStruct(map[string]any{"blob": strings.Repeat("x", 64<<10)})
	require.NoError(t, err)
	before := snapshot(t.Context(), t, e.pool)
	cases := map[string]struct {
		call  func() error
		field string
	}{
		"create without name": {func() error {
			_, err := e.srv.CreateAgent(ctx, &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{}})
			return err
		}, "agent.name"},
		"create with a bad name": {func() error {
			_, err := e.srv.CreateAgent(ctx, &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{Name: "Has Spaces"}})
			return err
		}, "agent.name"},
		"create with metadata over 64 KiB": {func() error {
			_, err := e.srv.CreateAgent(ctx, &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{Name: "big", Metadata: big}})
			return err
		}, "agent.metadata"},
		"create with a bad human_id": {func() error {
			_, err := e.srv.CreateAgent(ctx, &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{Name: "x", HumanId: "bob"}})
			return err
		}, "agent.human_id"},
		"update with metadata over 64 KiB": {func() error {
			_, err := e.srv.UpdateAgent(ctx, &adminv1.UpdateAgentRequest{Agent: &adminv1.Agent{Id: alice.agent.GetId(), Metadata: big}})
			return err
		}, "agent.metadata"},
		"update to an empty name": {func() error {
			_, err := e.srv.UpdateAgent(ctx, &adminv1.UpdateAgentRequest{
				Agent: &adminv1.Agent{Id: alice.agent.GetId()}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"name"}},
			})
			return err
		}, "agent.name"},
		"update human_id": {func() error {
			_, err := e.srv.UpdateAgent(ctx, &adminv1.UpdateAgentRequest{
				Agent: &adminv1.Agent{Id: alice.agent.GetId()}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"human_id"}},
			})
			return err
		}, "update_mask"},
		"update with a bad id": {func() error {
			_, err := e.srv.UpdateAgent(ctx, &adminv1.UpdateAgentRequest{Agent: &adminv1.Agent{Id: "x", Name: "y"}})
			return err
		}, "agent.id"},
		"list with a bad human_id": {func() error {
			_, err := e.srv.ListAgents(ctx, &adminv1.ListAgentsRequest{HumanId: "x"})
			return err
		}, "human_id"},
		"list with a negative page_size": {func() error {
			_, err := e.srv.ListAgents(ctx, &adminv1.ListAgentsRequest{PageSize: -1})
			return err
		}, "page_size"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			requireInvalid(t, tc.call(), tc.field)
			require.Equal(t, before, snapshot(t.Context(), t, e.pool))
		})
	}
}
