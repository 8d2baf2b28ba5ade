//go:build integration

package admin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
)

// TestEndpointPublicURL: public_url is set on create, changed and cleared
// through the update mask, returned by reads, and a bad one changes nothing.
func TestEndpointPublicURL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	const first, second = "https://hooks.example.com/hooks/twilio", "http://10.0.0.7:8080/hooks/twilio"
	ep, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{
		Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_TWILIO, PublicUrl: first,
	}, "0123456789abcdef0123456789abcdef")
	require.Equal(t, first, ep.GetPublicUrl())
	got, err := e.srv.GetEndpoint(ctx, &adminv1.GetEndpointRequest{Id: ep.GetId()})
	require.NoError(t, err)
	require.Equal(t, first, got.GetEndpoint().GetPublicUrl())

	upd, err := e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{Id: ep.GetId(), PublicUrl: second}})
	require.NoError(t, err, "no mask: a set public_url is changed")
	require.Equal(t, second, upd.GetEndpoint().GetPublicUrl())

	upd, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{Id: ep.GetId(), Name: "renamed"}})
	require.NoError(t, err)
	require.Equal(t, second, upd.GetEndpoint().GetPublicUrl(), "not named: kept")

	before := snapshot(t.Context(), t, e.pool)
	for _, bad := range []string{"https://hooks.example.com/x#frag", "https://user:pw@hooks.example.com/x", "hooks.example.com/x"} {
		_, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{Id: ep.GetId(), PublicUrl: bad}})
		requireInvalid(t, err, "endpoint.public_url")
	}
	require.Equal(t, before, snapshot(t.Context(), t, e.pool))

	upd, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint: &adminv1.Endpoint{Id: ep.GetId()}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"public_url"}},
	})
	require.NoError(t, err)
	require.Empty(t, upd.GetEndpoint().GetPublicUrl(), "named but empty: cleared")
	require.Zero(t, count(t, e.pool, "SELECT count(*) FROM endpoints WHERE id = $1 AND public_url IS NOT NULL", ep.GetId()))
}

// TestStandardWebhooksSecretsStayTheirOwn: a Standard Webhooks secret is
// base64 or a public key, never the raw key another scheme reads, so a
// scheme change to or from STANDARD_WEBHOOKS needs a new secret, and an
// unprefixed one that is not base64 is refused wherever a secret is given.
func TestStandardWebhooksSecretsStayTheirOwn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	const (
		github   = adminv1.VerificationScheme_VERIFICATION_SCHEME_GITHUB
		standard = adminv1.VerificationScheme_VERIFICATION_SCHEME_STANDARD_WEBHOOKS
		asText   = "my-own-secret-as-text"
	)
	gh, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{Verification: github}, "")
	sw, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{Verification: standard}, "")
	before := snapshot(t.Context(), t, e.pool)
	for name, req := range map[string]*adminv1.UpdateEndpointRequest{
		"github to standard keeping the hex key": {Endpoint: &adminv1.Endpoint{Id: gh.GetId(), Verification: standard}},
		"standard to github keeping the whsec_":  {Endpoint: &adminv1.Endpoint{Id: sw.GetId(), Verification: github}},
		"github to standard with a text secret":  {Endpoint: &adminv1.Endpoint{Id: gh.GetId(), Verification: standard}, Secret: asText},
	} {
		_, err := e.srv.UpdateEndpoint(ctx, req)
		require.Error(t, err, name)
		requireInvalid(t, err, "secret")
	}
	_, err := e.srv.AddEndpointSecret(ctx, &adminv1.AddEndpointSecretRequest{EndpointId: sw.GetId(), Secret: asText})
	requireInvalid(t, err, "secret")
	require.Equal(t, before, snapshot(context.Background(), t, e.pool))

	upd, err := e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint: &adminv1.Endpoint{Id: gh.GetId(), Verification: standard}, Secret: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	})
	require.NoError(t, err, "with a base64 secret the change goes through")
	require.Len(t, upd.GetEndpoint().GetSecrets(), 1)
	e.requireStored(ctx, t, upd.GetEndpoint().GetSecrets()[0].GetId(), "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", false)
}
