//go:build integration

package admin_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
)

// spoofed is a display name with a right-to-left override: it reads as
// "Alice (admin)" once the override reverses what follows it.
const spoofed = "Alice \u202E(nimda)"

// TestNamesWithInvisibleCharactersAreRefused reproduces finding 12 for the
// names a person reads in the console: a display name, an email, an agent's
// description, a credential's or an endpoint's name, or a route's topic with
// a bidi override (or another invisible character) is INVALID_ARGUMENT
// naming the field, on create and on update, and nothing is written;
// letters of any script stay valid.
func TestNamesWithInvisibleCharactersAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	root := e.rootCtx(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	before := snapshot(ctx, t, e.pool)
	none := adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE

	for field, call := range map[string]func() error{
		"human.display_name": func() error {
			_, err := e.srv.CreateHuman(root, &adminv1.CreateHumanRequest{Human: &adminv1.Human{Email: "zoe@example.test", DisplayName: spoofed}})
			return err
		},
		"human.email": func() error {
			_, err := e.srv.CreateHuman(root, &adminv1.CreateHumanRequest{Human: &adminv1.Human{Email: "ad\u200bmin@example.test"}})
			return err
		},
		"agent.description": func() error {
			_, err := e.srv.CreateAgent(ctx, &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{Name: "bot", Description: "pays\u2066 invoices"}})
			return err
		},
		"name": func() error {
			_, err := e.srv.MintCredential(ctx, &adminv1.MintCredentialRequest{Name: "ci\U000E0041", Scopes: []string{"read"}})
			return err
		},
		"endpoint.name": func() error {
			_, err := e.srv.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{Name: spoofed, Queue: "hooks", Verification: none}})
			return err
		},
		"endpoint.routes[0].topic": func() error {
			_, err := e.srv.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
				Queue: "hooks", Verification: none, Routes: []*adminv1.Route{{Queue: "a", Topic: "github.\u202Epush"}},
			}})
			return err
		},
		"human.display_name on update": func() error {
			_, err := e.srv.UpdateHuman(ctx, &adminv1.UpdateHumanRequest{
				Human: &adminv1.Human{Id: alice.human.GetId(), DisplayName: spoofed}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"display_name"}},
			})
			return err
		},
		"agent.description on update": func() error {
			_, err := e.srv.UpdateAgent(ctx, &adminv1.UpdateAgentRequest{
				Agent: &adminv1.Agent{Id: alice.agent.GetId(), Description: "\u3164"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"description"}},
			})
			return err
		},
	} {
		err := call()
		name, _ := strings.CutSuffix(field, " on update")
		requireInvalid(t, err, name)
		require.Contains(t, err.Error(), "only visible characters are accepted", field)
	}
	require.Equal(t, before, snapshot(ctx, t, e.pool), "nothing was written")

	_, err := e.srv.UpdateHuman(ctx, &adminv1.UpdateHumanRequest{
		Human: &adminv1.Human{Id: alice.human.GetId(), DisplayName: "Zoë 東京 👩\u200d💻"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"display_name"}},
	})
	require.NoError(t, err, "letters of any script, and emoji, are names")
	_, err = e.srv.CreateAgent(ctx, &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{Name: "writer", Description: "Schreibt Berichte.\n\tJeden Tag."}})
	require.NoError(t, err, "a description may break lines")
}
