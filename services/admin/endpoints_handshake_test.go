//go:build integration

package admin_test

import (
	"crypto/sha256"
	"strings"
	"testing"

	"buf.build/go/protovalidate"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
)

const (
	zoomScheme    = adminv1.VerificationScheme_VERIFICATION_SCHEME_ZOOM
	metaScheme    = adminv1.VerificationScheme_VERIFICATION_SCHEME_META
	xScheme       = adminv1.VerificationScheme_VERIFICATION_SCHEME_X
	msGraphScheme = adminv1.VerificationScheme_VERIFICATION_SCHEME_MS_GRAPH
	githubScheme  = adminv1.VerificationScheme_VERIFICATION_SCHEME_GITHUB
)

// storedVerifyToken is endpoints.verify_token_sha256 of id (nil: none).
func (e *env) storedVerifyToken(t *testing.T, id string) []byte {
	t.Helper()
	var sum []byte
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT verify_token_sha256 FROM endpoints WHERE id = $1`, id).Scan(&sum))
	return sum
}

func sha256Bytes(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// requireNotRendered: no rendering of m carries s.
func requireNotRendered(t *testing.T, m proto.Message, s string) {
	t.Helper()
	j, err := protojson.Marshal(m)
	require.NoError(t, err)
	require.NotContains(t, string(j), s)
}

// TestCreateEndpointHandshakeSchemes: Zoom, Meta and X take the secret
// their provider issued, sealed; Graph's clientState is generated where not
// given; Meta's verify token is stored as its SHA-256 only and never
// returned.
func TestCreateEndpointHandshakeSchemes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	const token = "meatyhamhock-verify"
	for _, tc := range []struct {
		scheme        adminv1.VerificationScheme
		secret, token string
	}{
		{zoomScheme, "Wq8GqLx2Ri6zlrBY1yk9Nw", ""},
		{metaScheme, "6f1a0c2e9b8d7c3e5a4f2b1d0e9c8a7b", token},
		{xScheme, "s3cr3tConsumerKeySecretFromTheXDeveloperPortal00", ""},
		{msGraphScheme, "", ""},
		{msGraphScheme, "secretClientValue", ""},
	} {
		created, err := e.srv.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{
			Endpoint: &adminv1.Endpoint{Queue: "hooks", Verification: tc.scheme, MetaVerifyToken: tc.token}, Secret: tc.secret,
		})
		require.NoError(t, err, tc.scheme)
		ep := created.GetEndpoint()
		require.Equal(t, tc.scheme, ep.GetVerification())
		plain := created.GetSecret()
		if tc.secret == "" {
			require.True(t, isHex64(plain), "a generated clientState: %q", plain)
		} else {
			require.Equal(t, tc.secret, plain)
		}
		e.requireStored(ctx, t, ep.GetSecrets()[0].GetId(), plain, false)
		require.Equal(t, tc.token != "", ep.GetHasMetaVerifyToken())
		require.Empty(t, ep.GetMetaVerifyToken(), "input only")
		if tc.token != "" {
			require.Equal(t, sha256Bytes(tc.token), e.storedVerifyToken(t, ep.GetId()))
		} else {
			require.Nil(t, e.storedVerifyToken(t, ep.GetId()))
		}
		got, err := e.srv.GetEndpoint(ctx, &adminv1.GetEndpointRequest{Id: ep.GetId()})
		require.NoError(t, err)
		require.True(t, proto.Equal(ep, got.GetEndpoint()))
		requireNotRendered(t, got, token)
		requireNotRendered(t, created, token)
	}
}

// TestCreateEndpointHandshakeValidation: each rule names its field, in the
// server (which the contract's rules back) and in the contract's rules.
func TestCreateEndpointHandshakeValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	before := snapshot(t.Context(), t, e.pool)
	req := func(scheme adminv1.VerificationScheme, secret, token string) *adminv1.CreateEndpointRequest {
		return &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{Queue: "hooks", Verification: scheme, MetaVerifyToken: token}, Secret: secret}
	}
	const secret = "a-provider-issued-secret"
	for name, tc := range map[string]struct {
		req   *adminv1.CreateEndpointRequest
		field string
	}{
		"meta without verify token":  {req(metaScheme, secret, ""), "endpoint.meta_verify_token"},
		"verify token too short":     {req(metaScheme, secret, "short"), "endpoint.meta_verify_token"},
		"verify token too long":      {req(metaScheme, secret, strings.Repeat("t", 257)), "endpoint.meta_verify_token"},
		"verify token for github":    {req(githubScheme, "", "meatyhamhock"), "endpoint.meta_verify_token"},
		"clientState over 128 chars": {req(msGraphScheme, strings.Repeat("c", 129), ""), "secret"},
	} {
		_, err := e.srv.CreateEndpoint(ctx, tc.req)
		requireInvalid(t, err, tc.field)
		require.Error(t, protovalidate.Validate(tc.req), "the contract's rules refuse %s too", name)
	}
	require.NoError(t, protovalidate.Validate(req(metaScheme, secret, "meatyhamhock")))
	// The provider issues these secrets: an endpoint may await its secret
	// (AddEndpointSecret), refusing deliveries until then.
	require.NoError(t, protovalidate.Validate(req(zoomScheme, "", "")))
	require.NoError(t, protovalidate.Validate(req(xScheme, "", "")))
	require.NoError(t, protovalidate.Validate(req(msGraphScheme, strings.Repeat("c", 128), "")))
	require.Equal(t, before, snapshot(t.Context(), t, e.pool), "nothing written")
}

// TestUpdateEndpointMetaVerifyToken: changing to META needs the verify
// token; naming it replaces the stored digest; leaving META drops it; no
// other scheme takes one.
func TestUpdateEndpointMetaVerifyToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	ep, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{Verification: githubScheme}, "")
	id := ep.GetId()

	_, err := e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint: &adminv1.Endpoint{Id: id, Verification: metaScheme}, Secret: "6f1a0c2e9b8d7c3e5a4f2b1d0e9c8a7b",
	})
	requireInvalid(t, err, "endpoint.meta_verify_token")
	_, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{Id: id, Verification: metaScheme, MetaVerifyToken: "first-token"}})
	requireInvalid(t, err, "secret") // Meta issues the app secret: a GitHub one is not carried over
	upd, err := e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint: &adminv1.Endpoint{Id: id, Verification: metaScheme, MetaVerifyToken: "first-token"}, Secret: "6f1a0c2e9b8d7c3e5a4f2b1d0e9c8a7b",
	})
	require.NoError(t, err)
	require.True(t, upd.GetEndpoint().GetHasMetaVerifyToken())
	require.Equal(t, sha256Bytes("first-token"), e.storedVerifyToken(t, id))

	upd, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint: &adminv1.Endpoint{Id: id, MetaVerifyToken: "second-token"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"meta_verify_token"}},
	})
	require.NoError(t, err)
	require.Equal(t, metaScheme, upd.GetEndpoint().GetVerification())
	require.Equal(t, sha256Bytes("second-token"), e.storedVerifyToken(t, id))
	requireNotRendered(t, upd, "second-token")
	_, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint: &adminv1.Endpoint{Id: id}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"meta_verify_token"}},
	})
	requireInvalid(t, err, "endpoint.meta_verify_token") // named but empty
	_, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint: &adminv1.Endpoint{Id: id, Verification: githubScheme, MetaVerifyToken: "third-token"}, Secret: "a-new-github-secret",
	})
	requireInvalid(t, err, "endpoint.meta_verify_token") // only META takes one

	upd, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint: &adminv1.Endpoint{Id: id, Verification: githubScheme}, Secret: "a-new-github-secret",
	})
	require.NoError(t, err)
	require.False(t, upd.GetEndpoint().GetHasMetaVerifyToken())
	require.Nil(t, e.storedVerifyToken(t, id), "leaving META drops the token")
	_, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint: &adminv1.Endpoint{Id: id, MetaVerifyToken: "fourth-token"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"meta_verify_token"}},
	})
	requireInvalid(t, err, "endpoint.meta_verify_token")
}
