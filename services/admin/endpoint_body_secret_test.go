//go:build integration

package admin_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
)

// The secret as a REST body carries it, Endpoint.secret, means the same as
// the request's own secret, on create and update; both set must agree.
func TestEndpointSecretInTheEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	const stripe = "whsec_stripe+signing/secret=="

	created, err := e.srv.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Queue: "hooks", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_STRIPE, Secret: stripe,
	}})
	require.NoError(t, err)
	require.Equal(t, stripe, created.GetSecret(), "the response's one-time secret is the one given")
	ep := created.GetEndpoint()
	e.requireStored(ctx, t, ep.GetSecrets()[0].GetId(), stripe, false)

	// Both set and equal: fine. Different: refused, nothing stored.
	same, err := e.srv.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Secret: stripe, Endpoint: &adminv1.Endpoint{
		Queue: "hooks", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_STRIPE, Secret: stripe,
	}})
	require.NoError(t, err)
	require.Equal(t, stripe, same.GetSecret())
	before := snapshot(t.Context(), t, e.pool)
	_, err = e.srv.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Secret: stripe + "x", Endpoint: &adminv1.Endpoint{
		Queue: "hooks", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_STRIPE, Secret: stripe,
	}})
	requireInvalid(t, err, "secret")
	_, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{Secret: "xoxs-slack-signing-secret-1", Endpoint: &adminv1.Endpoint{
		Id: ep.GetId(), Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_SLACK, Secret: "xoxs-slack-signing-secret-2",
	}})
	requireInvalid(t, err, "secret")
	// Named in the mask, it follows UpdateEndpointRequest.secret's rules:
	// only with a verification change.
	_, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint:   &adminv1.Endpoint{Id: ep.GetId(), Secret: "xoxs-slack-signing-secret-1"},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"secret"}},
	})
	requireInvalid(t, err, "secret")
	require.Equal(t, before, snapshot(t.Context(), t, e.pool), "nothing written by a refused request")

	// A PATCH body {"verification": …, "secret": …}: the gateway's mask
	// names both, and the secret replaces the stored one.
	const slack = "slack+signing/secret-0001"
	upd, err := e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint:   &adminv1.Endpoint{Id: ep.GetId(), Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_SLACK, Secret: slack},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"verification", "secret"}},
	})
	require.NoError(t, err)
	require.Equal(t, adminv1.VerificationScheme_VERIFICATION_SCHEME_SLACK, upd.GetEndpoint().GetVerification())
	require.Len(t, upd.GetEndpoint().GetSecrets(), 1)
	e.requireStored(ctx, t, upd.GetEndpoint().GetSecrets()[0].GetId(), slack, false)

	// Without a mask, a set Endpoint.secret counts as named.
	const bearer = "sbw_bearer+token/000000001"
	upd, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Id: ep.GetId(), Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_BEARER, Secret: bearer,
	}})
	require.NoError(t, err)
	e.requireStored(ctx, t, upd.GetEndpoint().GetSecrets()[0].GetId(), bearer, true)
}

// Endpoint.secret is input only: no response carries it, nor any other
// trace of the secret.
func TestBodySecretIsNeverReturned(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	const first, second, third = "first+hmac/secret-0001", "second+hmac/secret-0002", "third+hmac/secret-00003"

	created, err := e.srv.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Queue: "hooks", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_GITHUB, Secret: first,
	}})
	require.NoError(t, err)
	id := created.GetEndpoint().GetId()
	requireNoSecretMaterial(t, created.GetEndpoint(), first)
	upd, err := e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Id: id, Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_SHOPIFY, Secret: second,
	}})
	require.NoError(t, err)
	added, err := e.srv.AddEndpointSecret(ctx, &adminv1.AddEndpointSecretRequest{EndpointId: id, Secret: third})
	require.NoError(t, err)
	require.Equal(t, third, added.GetSecret(), "AddEndpointSecret's one-time secret")
	got, err := e.srv.GetEndpoint(ctx, &adminv1.GetEndpointRequest{Id: id})
	require.NoError(t, err)
	list, err := e.srv.ListEndpoints(ctx, &adminv1.ListEndpointsRequest{})
	require.NoError(t, err)
	for _, m := range []proto.Message{created.GetEndpoint(), upd, added.GetEndpoint(), got, list} {
		for _, plain := range []string{first, second, third} {
			requireNoSecretMaterial(t, m, plain)
		}
	}
	for _, ep := range append([]*adminv1.Endpoint{created.GetEndpoint(), upd.GetEndpoint(), added.GetEndpoint(), got.GetEndpoint()},
		list.GetEndpoints()...) {
		require.Empty(t, ep.GetSecret())
	}
}
