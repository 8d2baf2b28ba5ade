//go:build integration

package admin_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
)

// storedSecret is one endpoint_secrets row as the database holds it.
type storedSecret struct {
	kind   string
	keyID  *string
	sealed []byte
	hash   []byte
	hint   string
}

func (e *env) storedSecret(ctx context.Context, t *testing.T, id string) storedSecret {
	t.Helper()
	var s storedSecret
	require.NoError(t, e.pool.QueryRow(ctx,
		"SELECT kind, key_id, sealed, hash, hint FROM endpoint_secrets WHERE id = $1", id,
	).Scan(&s.kind, &s.keyID, &s.sealed, &s.hash, &s.hint))
	return s
}

// requireStored asserts that the row id holds exactly plain: sealed under
// the keyring with the row id as associated data, or hashed for
// bearer/basic. It also checks the row does not open under another id.
func (e *env) requireStored(ctx context.Context, t *testing.T, id, plain string, hashed bool) {
	t.Helper()
	s := e.storedSecret(ctx, t, id)
	if hashed {
		sum := sha256.Sum256([]byte(plain))
		require.Equal(t, "hashed", s.kind)
		require.Equal(t, sum[:], s.hash)
		require.Nil(t, s.keyID)
		require.Nil(t, s.sealed)
		return
	}
	require.Equal(t, "sealed", s.kind)
	require.NotNil(t, s.keyID)
	require.Equal(t, "k2", *s.keyID, "sealed under the primary key")
	require.NotContains(t, string(s.sealed), plain)
	rowID := mustUUID(t, id)
	got, err := e.keys.Open(*s.keyID, s.sealed, rowID[:])
	require.NoError(t, err)
	require.Equal(t, plain, string(got))
	other := uuid.New()
	_, err = e.keys.Open(*s.keyID, s.sealed, other[:])
	require.Error(t, err, "bound to its row")
}

// requireNoSecretMaterial asserts that no rendering of m carries plain.
func requireNoSecretMaterial(t *testing.T, m proto.Message, plain string) {
	t.Helper()
	j, err := protojson.Marshal(m)
	require.NoError(t, err)
	require.NotContains(t, string(j), plain)
	last := plain[len(plain)-8:]
	require.NotContains(t, string(j), last, "not even its last 8 characters")
}

func TestEndpointContractCarriesNoSecretMaterial(t *testing.T) {
	t.Parallel()
	fields := func(m protoreflect.MessageDescriptor) []string {
		var out []string
		for i := 0; i < m.Fields().Len(); i++ {
			out = append(out, string(m.Fields().Get(i).Name()))
		}
		return out
	}
	ep := (&adminv1.Endpoint{}).ProtoReflect().Descriptor()
	for _, f := range fields(ep) {
		if strings.Contains(f, "secret") {
			require.Contains(t, []string{"has_secret", "secret_key_id", "secrets", "secret"}, f, "Endpoint must not carry a secret")
		}
	}
	// secret is input only (never set on a response: TestBodySecretIsNeverReturned)
	// and marked debug_redact, which the REST edge refuses in a query string.
	opts, ok := ep.Fields().ByName("secret").Options().(*descriptorpb.FieldOptions)
	require.True(t, ok)
	require.True(t, opts.GetDebugRedact())
	require.Equal(t, []string{"id", "hint", "key_id", "created_at", "expires_at"},
		fields((&adminv1.EndpointSecret{}).ProtoReflect().Descriptor()))
	for _, m := range []proto.Message{
		&adminv1.GetEndpointResponse{}, &adminv1.ListEndpointsResponse{}, &adminv1.UpdateEndpointResponse{},
		&adminv1.RemoveEndpointSecretResponse{}, &adminv1.DeleteEndpointResponse{},
	} {
		for _, f := range fields(m.ProtoReflect().Descriptor()) {
			require.NotEqual(t, "secret", f)
		}
	}
}

func TestCreateEndpointEachScheme(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	pk := make([]byte, 32)
	pk[0] = 0x3d // the server checks the shape; the verifier checks the point
	pub := "whpk_" + base64.StdEncoding.EncodeToString(pk)
	cases := []struct {
		name    string
		scheme  adminv1.VerificationScheme
		header  string
		secret  string
		hashed  bool
		pattern func(string) bool
		hint    string
	}{
		{"none", adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE, "", "", false, nil, ""},
		{"hmac generated", adminv1.VerificationScheme_VERIFICATION_SCHEME_HMAC_SHA256, "X-Sig", "", false, isHex64, ""},
		{"hmac given", adminv1.VerificationScheme_VERIFICATION_SCHEME_HMAC_SHA256, "X-Sig", "my-own-hmac-secret-0001", false, nil, "…0001"},
		{"github generated", adminv1.VerificationScheme_VERIFICATION_SCHEME_GITHUB, "", "", false, isHex64, ""},
		{"shopify generated", adminv1.VerificationScheme_VERIFICATION_SCHEME_SHOPIFY, "", "", false, isHex64, ""},
		{"stripe given", adminv1.VerificationScheme_VERIFICATION_SCHEME_STRIPE, "", "whsec_stripeissued0123456789", false, nil, "whsec_…6789"},
		{"slack given", adminv1.VerificationScheme_VERIFICATION_SCHEME_SLACK, "", "8f742231b10e8888abcd99yyyzzz85a5", false, nil, "…85a5"},
		{"standard generated", adminv1.VerificationScheme_VERIFICATION_SCHEME_STANDARD_WEBHOOKS, "", "", false, isWhsec, ""},
		{"standard public key", adminv1.VerificationScheme_VERIFICATION_SCHEME_STANDARD_WEBHOOKS, "", pub, false, nil, "whpk_…" + pub[len(pub)-4:]},
		{"bearer generated", adminv1.VerificationScheme_VERIFICATION_SCHEME_BEARER, "", "", true, isBearer, ""},
		{"bearer given", adminv1.VerificationScheme_VERIFICATION_SCHEME_BEARER, "", "a-static-token-from-ops", true, nil, "…-ops"},
		{"basic given", adminv1.VerificationScheme_VERIFICATION_SCHEME_BASIC, "", "hookuser:correct-horse-battery", true, nil, "hookuser:…"},
		{"twilio given", adminv1.VerificationScheme_VERIFICATION_SCHEME_TWILIO, "", "0123456789abcdef0123456789abcdef", false, nil, "…cdef"},
		{"standard given without whsec_", adminv1.VerificationScheme_VERIFICATION_SCHEME_STANDARD_WEBHOOKS, "", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", false, nil, "…LaSw"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			created, err := e.srv.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{
				Endpoint: &adminv1.Endpoint{
					Queue: "hooks", Verification: tc.scheme, SignatureHeader: tc.header, Name: tc.name,
					AgentId: alice.agent.GetId(), Slug: "ignored-ignored-ignored", Id: "ignored",
				},
				Secret: tc.secret,
			})
			require.NoError(t, err)
			ep := created.GetEndpoint()
			mustUUID(t, ep.GetId())
			require.Equal(t, alice.human.GetId(), ep.GetHumanId())
			require.Equal(t, alice.agent.GetId(), ep.GetAgentId())
			require.Len(t, ep.GetSlug(), 24)
			require.Regexp(t, `^[A-Za-z0-9_-]{24}$`, ep.GetSlug())
			require.Equal(t, "/hooks/"+ep.GetSlug(), ep.GetUrlPath())
			require.Equal(t, tc.scheme, ep.GetVerification())
			require.True(t, ep.GetEnabled())
			require.EqualValues(t, 1<<20, ep.GetMaxBodyBytes())
			require.EqualValues(t, 300, ep.GetToleranceSeconds())
			require.Equal(t, "sha256", ep.GetHmacAlgorithm())
			require.Equal(t, "hex", ep.GetHmacEncoding())

			plain := created.GetSecret()
			if tc.scheme == adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE {
				require.Empty(t, plain)
				require.False(t, ep.GetHasSecret())
				require.Empty(t, ep.GetSecrets())
				require.Empty(t, ep.GetSecretKeyId())
				return
			}
			if tc.secret != "" {
				require.Equal(t, tc.secret, plain)
			} else {
				require.True(t, tc.pattern(plain), "generated secret %q has the scheme's form", plain)
			}
			require.True(t, ep.GetHasSecret())
			require.Len(t, ep.GetSecrets(), 1)
			sec := ep.GetSecrets()[0]
			mustUUID(t, sec.GetId())
			require.NotNil(t, sec.GetCreatedAt())
			require.Nil(t, sec.GetExpiresAt())
			if tc.hint != "" {
				require.Equal(t, tc.hint, sec.GetHint())
			} else {
				require.Equal(t, plain[len(plain)-4:], sec.GetHint()[len(sec.GetHint())-4:])
			}
			if tc.hashed {
				require.Empty(t, sec.GetKeyId())
				require.Empty(t, ep.GetSecretKeyId())
			} else {
				require.Equal(t, "k2", sec.GetKeyId())
				require.Equal(t, "k2", ep.GetSecretKeyId())
			}
			e.requireStored(ctx, t, sec.GetId(), plain, tc.hashed)

			// Get and List describe the secret, never return it.
			got, err := e.srv.GetEndpoint(ctx, &adminv1.GetEndpointRequest{Id: ep.GetId()})
			require.NoError(t, err)
			require.True(t, proto.Equal(ep, got.GetEndpoint()), "Get returns what Create did")
			requireNoSecretMaterial(t, got, plain)
			list, err := e.srv.ListEndpoints(ctx, &adminv1.ListEndpointsRequest{})
			require.NoError(t, err)
			requireNoSecretMaterial(t, list, plain)
		})
	}
}

func isHex64(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == 32
}

func isWhsec(s string) bool {
	rest, ok := strings.CutPrefix(s, "whsec_")
	b, err := base64.StdEncoding.DecodeString(rest)
	return ok && err == nil && len(b) == 32
}

func isBearer(s string) bool {
	rest, ok := strings.CutPrefix(s, "sbw_")
	b, err := base64.RawURLEncoding.DecodeString(rest)
	return ok && err == nil && len(b) == 32
}

func (e *env) createEndpoint(ctx context.Context, t *testing.T, ep *adminv1.Endpoint, secret string) (*adminv1.Endpoint, string) {
	t.Helper()
	if ep.GetQueue() == "" {
		ep.Queue = "hooks"
	}
	created, err := e.srv.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Endpoint: ep, Secret: secret})
	require.NoError(t, err)
	return created.GetEndpoint(), created.GetSecret()
}

func TestEndpointTenancy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	bob := e.seedTenant(t, "bob")
	aliceCtx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	bobCtx := e.asTenant(t, mustUUID(t, bob.human.GetId()))
	ep, _ := e.createEndpoint(aliceCtx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_GITHUB}, "")
	secretID := ep.GetSecrets()[0].GetId()

	before := snapshot(t.Context(), t, e.pool)
	_, err := e.srv.GetEndpoint(bobCtx, &adminv1.GetEndpointRequest{Id: ep.GetId()})
	requireCode(t, codes.NotFound, err)
	_, err = e.srv.UpdateEndpoint(bobCtx, &adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{Id: ep.GetId(), Name: "mine"}})
	requireCode(t, codes.NotFound, err)
	_, err = e.srv.DeleteEndpoint(bobCtx, &adminv1.DeleteEndpointRequest{Id: ep.GetId()})
	requireCode(t, codes.NotFound, err)
	_, err = e.srv.AddEndpointSecret(bobCtx, &adminv1.AddEndpointSecretRequest{EndpointId: ep.GetId()})
	requireCode(t, codes.NotFound, err)
	_, err = e.srv.RemoveEndpointSecret(bobCtx, &adminv1.RemoveEndpointSecretRequest{EndpointId: ep.GetId(), SecretId: secretID})
	requireCode(t, codes.NotFound, err)
	list, err := e.srv.ListEndpoints(bobCtx, &adminv1.ListEndpointsRequest{HumanId: alice.human.GetId()})
	require.NoError(t, err)
	require.Empty(t, list.GetEndpoints())
	// Bob may neither create for Alice nor use Alice's agent.
	_, err = e.srv.CreateEndpoint(bobCtx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
		HumanId: alice.human.GetId(), Queue: "q", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE,
	}})
	requireCode(t, codes.NotFound, err)
	_, err = e.srv.CreateEndpoint(bobCtx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
		AgentId: alice.agent.GetId(), Queue: "q", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE,
	}})
	requireCode(t, codes.NotFound, err)
	require.Equal(t, before, snapshot(t.Context(), t, e.pool))
	// Nor move his own endpoint to Alice's agent.
	bobEp, _ := e.createEndpoint(bobCtx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE}, "")
	before = snapshot(t.Context(), t, e.pool)
	_, err = e.srv.UpdateEndpoint(bobCtx, &adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{Id: bobEp.GetId(), AgentId: alice.agent.GetId()}})
	requireCode(t, codes.NotFound, err)
	require.Equal(t, before, snapshot(t.Context(), t, e.pool))

	// An administrator may create for another human, with that human's agent only.
	root := e.rootCtx(t)
	forBob, _ := e.createEndpoint(root, t, &adminv1.Endpoint{
		HumanId: bob.human.GetId(), AgentId: bob.agent.GetId(), Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE,
	}, "")
	require.Equal(t, bob.human.GetId(), forBob.GetHumanId())
	_, err = e.srv.CreateEndpoint(root, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
		HumanId: bob.human.GetId(), AgentId: alice.agent.GetId(), Queue: "q", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE,
	}})
	requireCode(t, codes.NotFound, err)
	all, err := e.srv.ListEndpoints(root, &adminv1.ListEndpointsRequest{})
	require.NoError(t, err)
	require.Len(t, all.GetEndpoints(), 3)
	mine, err := e.srv.ListEndpoints(bobCtx, &adminv1.ListEndpointsRequest{})
	require.NoError(t, err)
	require.Len(t, mine.GetEndpoints(), 2)
}

func TestListEndpointsPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	var ids []string
	for range 3 {
		ep, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_STANDARD_WEBHOOKS}, "")
		ids = append(ids, ep.GetId())
	}
	first, err := e.srv.ListEndpoints(ctx, &adminv1.ListEndpointsRequest{PageSize: 2})
	require.NoError(t, err)
	require.NotEmpty(t, first.GetNextPageToken())
	second, err := e.srv.ListEndpoints(ctx, &adminv1.ListEndpointsRequest{PageSize: 2, PageToken: first.GetNextPageToken()})
	require.NoError(t, err)
	require.Empty(t, second.GetNextPageToken())
	var got []string
	for _, ep := range append(first.GetEndpoints(), second.GetEndpoints()...) {
		got = append(got, ep.GetId())
		require.Len(t, ep.GetSecrets(), 1)
		require.True(t, ep.GetHasSecret())
	}
	require.Equal(t, ids, got, "oldest first")
	_, err = e.srv.ListEndpoints(ctx, &adminv1.ListEndpointsRequest{PageToken: first.GetNextPageToken(), HumanId: alice.human.GetId()})
	requireInvalid(t, err, "page_token")
}

func TestEndpointSecretRotation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	ep, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_STANDARD_WEBHOOKS}, "")
	oldID := ep.GetSecrets()[0].GetId()

	var dbNow time.Time
	require.NoError(t, e.pool.QueryRow(t.Context(), "SELECT now()").Scan(&dbNow))
	added, err := e.srv.AddEndpointSecret(ctx, &adminv1.AddEndpointSecretRequest{
		EndpointId: ep.GetId(), PreviousValidFor: durationpb.New(time.Hour),
	})
	require.NoError(t, err)
	require.True(t, isWhsec(added.GetSecret()))
	secrets := added.GetEndpoint().GetSecrets()
	require.Len(t, secrets, 2)
	require.Equal(t, oldID, secrets[0].GetId())
	require.Equal(t, added.GetSecretId(), secrets[1].GetId())
	require.Nil(t, secrets[1].GetExpiresAt())
	expiry := secrets[0].GetExpiresAt().AsTime()
	require.WithinDuration(t, dbNow.Add(time.Hour), expiry, time.Minute)
	require.True(t, added.GetEndpoint().GetHasSecret())
	e.requireStored(ctx, t, added.GetSecretId(), added.GetSecret(), false)
	requireNoSecretMaterial(t, added.GetEndpoint(), added.GetSecret())

	// A supplied secret, and 0 leaves the others alone (a longer grace
	// never extends an earlier expiry either).
	mine := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a supplied key of some length!!"))
	third, err := e.srv.AddEndpointSecret(ctx, &adminv1.AddEndpointSecretRequest{EndpointId: ep.GetId(), Secret: mine})
	require.NoError(t, err)
	require.Equal(t, mine, third.GetSecret())
	require.Len(t, third.GetEndpoint().GetSecrets(), 3)
	require.True(t, expiry.Equal(third.GetEndpoint().GetSecrets()[0].GetExpiresAt().AsTime()))
	require.Nil(t, third.GetEndpoint().GetSecrets()[1].GetExpiresAt())
	again, err := e.srv.AddEndpointSecret(ctx, &adminv1.AddEndpointSecretRequest{
		EndpointId: ep.GetId(), PreviousValidFor: durationpb.New(7 * 24 * time.Hour),
	})
	require.NoError(t, err)
	require.True(t, expiry.Equal(again.GetEndpoint().GetSecrets()[0].GetExpiresAt().AsTime()), "never later than before")

	// Remove: one of several is fine; the last unexpired one is refused.
	rm, err := e.srv.RemoveEndpointSecret(ctx, &adminv1.RemoveEndpointSecretRequest{EndpointId: ep.GetId(), SecretId: oldID})
	require.NoError(t, err)
	require.Len(t, rm.GetEndpoint().GetSecrets(), 3)
	for _, id := range []string{added.GetSecretId(), third.GetSecretId()} {
		_, err = e.srv.RemoveEndpointSecret(ctx, &adminv1.RemoveEndpointSecretRequest{EndpointId: ep.GetId(), SecretId: id})
		require.NoError(t, err)
	}
	last := again.GetSecretId()
	before := snapshot(t.Context(), t, e.pool)
	_, err = e.srv.RemoveEndpointSecret(ctx, &adminv1.RemoveEndpointSecretRequest{EndpointId: ep.GetId(), SecretId: last})
	requireCode(t, codes.FailedPrecondition, err)
	_, err = e.srv.RemoveEndpointSecret(ctx, &adminv1.RemoveEndpointSecretRequest{EndpointId: ep.GetId(), SecretId: oldID})
	requireCode(t, codes.NotFound, err)
	require.Equal(t, before, snapshot(t.Context(), t, e.pool))

	// Expired secrets do not count: with only an expired one besides, the
	// active one is still the last; has_secret is false once all expired.
	grace, err := e.srv.AddEndpointSecret(ctx, &adminv1.AddEndpointSecretRequest{EndpointId: ep.GetId(), PreviousValidFor: durationpb.New(time.Second)})
	require.NoError(t, err)
	_, err = e.pool.Exec(t.Context(), "UPDATE endpoint_secrets SET expires_at = now() - interval '1 second' WHERE id = $1", last)
	require.NoError(t, err)
	_, err = e.srv.RemoveEndpointSecret(ctx, &adminv1.RemoveEndpointSecretRequest{EndpointId: ep.GetId(), SecretId: grace.GetSecretId()})
	requireCode(t, codes.FailedPrecondition, err)
	_, err = e.pool.Exec(t.Context(), "UPDATE endpoint_secrets SET expires_at = now() - interval '1 second' WHERE endpoint_id = $1", ep.GetId())
	require.NoError(t, err)
	got, err := e.srv.GetEndpoint(ctx, &adminv1.GetEndpointRequest{Id: ep.GetId()})
	require.NoError(t, err)
	require.False(t, got.GetEndpoint().GetHasSecret())
	_, err = e.srv.RemoveEndpointSecret(ctx, &adminv1.RemoveEndpointSecretRequest{EndpointId: ep.GetId(), SecretId: last})
	require.NoError(t, err, "an expired secret can always be removed")

	// Bearer: hashed, generated.
	bearer, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_BEARER}, "")
	nb, err := e.srv.AddEndpointSecret(ctx, &adminv1.AddEndpointSecretRequest{EndpointId: bearer.GetId()})
	require.NoError(t, err)
	require.True(t, isBearer(nb.GetSecret()))
	e.requireStored(ctx, t, nb.GetSecretId(), nb.GetSecret(), true)

	// Refusals.
	none, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE}, "")
	stripe, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_STRIPE}, "whsec_from_stripe_dashboard")
	before = snapshot(t.Context(), t, e.pool)
	_, err = e.srv.AddEndpointSecret(ctx, &adminv1.AddEndpointSecretRequest{EndpointId: none.GetId()})
	requireCode(t, codes.FailedPrecondition, err)
	_, err = e.srv.AddEndpointSecret(ctx, &adminv1.AddEndpointSecretRequest{EndpointId: stripe.GetId()})
	requireInvalid(t, err, "secret")
	_, err = e.srv.AddEndpointSecret(ctx, &adminv1.AddEndpointSecretRequest{EndpointId: stripe.GetId(), Secret: "short"})
	requireInvalid(t, err, "secret")
	_, err = e.srv.AddEndpointSecret(ctx, &adminv1.AddEndpointSecretRequest{EndpointId: stripe.GetId(), Secret: "whsec_from_stripe_dashboard2", PreviousValidFor: durationpb.New(8 * 24 * time.Hour)})
	requireInvalid(t, err, "previous_valid_for")
	_, err = e.srv.AddEndpointSecret(ctx, &adminv1.AddEndpointSecretRequest{EndpointId: stripe.GetId(), Secret: "whsec_from_stripe_dashboard2", PreviousValidFor: durationpb.New(-time.Second)})
	requireInvalid(t, err, "previous_valid_for")
	_, err = e.srv.AddEndpointSecret(ctx, &adminv1.AddEndpointSecretRequest{EndpointId: uuid.NewString()})
	requireCode(t, codes.NotFound, err)
	_, err = e.srv.RemoveEndpointSecret(ctx, &adminv1.RemoveEndpointSecretRequest{EndpointId: stripe.GetId(), SecretId: "nope"})
	requireInvalid(t, err, "secret_id")
	require.Equal(t, before, snapshot(t.Context(), t, e.pool))

	// At most 10 unexpired secrets.
	for range 9 {
		_, err = e.srv.AddEndpointSecret(ctx, &adminv1.AddEndpointSecretRequest{EndpointId: bearer.GetId()})
		if err != nil {
			break
		}
	}
	requireCode(t, codes.FailedPrecondition, err)
}

func TestUpdateEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	ep, plain := e.createEndpoint(ctx, t, &adminv1.Endpoint{
		Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_HMAC_SHA256, SignatureHeader: "X-Signature", AgentId: alice.agent.GetId(),
	}, "")
	secretID := ep.GetSecrets()[0].GetId()

	// No mask: the non-default fields.
	upd, err := e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Id: ep.GetId(), Name: "orders", Queue: "orders.v2", HmacAlgorithm: "sha512", HmacEncoding: "base64",
		SignaturePrefix: "sha512=", ToleranceSeconds: 60, RateLimitPerSecond: 50, MaxBodyBytes: 4096, Enabled: proto.Bool(false),
		Slug: "ignored-ignored-ignored", HumanId: e.root.String(),
	}})
	require.NoError(t, err)
	u := upd.GetEndpoint()
	require.Equal(t, "orders", u.GetName())
	require.Equal(t, "orders.v2", u.GetQueue())
	require.Equal(t, "sha512", u.GetHmacAlgorithm())
	require.Equal(t, "base64", u.GetHmacEncoding())
	require.Equal(t, "sha512=", u.GetSignaturePrefix())
	require.EqualValues(t, 60, u.GetToleranceSeconds())
	require.EqualValues(t, 50, u.GetRateLimitPerSecond())
	require.EqualValues(t, 4096, u.GetMaxBodyBytes())
	require.False(t, u.GetEnabled())
	require.Equal(t, ep.GetSlug(), u.GetSlug(), "slug never changes")
	require.Equal(t, alice.human.GetId(), u.GetHumanId())
	require.Equal(t, alice.agent.GetId(), u.GetAgentId())
	require.True(t, proto.Equal(&adminv1.Endpoint{Secrets: ep.GetSecrets()}, &adminv1.Endpoint{Secrets: u.GetSecrets()}), "secrets untouched")
	require.True(t, u.GetUpdatedAt().AsTime().After(ep.GetUpdatedAt().AsTime()) || u.GetUpdatedAt().AsTime().Equal(ep.GetUpdatedAt().AsTime()))
	e.requireStored(ctx, t, secretID, plain, false)

	// Named but empty: agent cleared, rate limit 0, defaults restored.
	upd, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint:   &adminv1.Endpoint{Id: ep.GetId()},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"agent_id", "rate_limit_per_second", "hmac_algorithm", "tolerance_seconds", "enabled"}},
	})
	require.NoError(t, err)
	u = upd.GetEndpoint()
	require.Empty(t, u.GetAgentId())
	require.Zero(t, u.GetRateLimitPerSecond())
	require.Equal(t, "sha256", u.GetHmacAlgorithm())
	require.EqualValues(t, 300, u.GetToleranceSeconds())
	require.False(t, u.GetEnabled())
	require.Equal(t, "orders", u.GetName())

	// Between sealed schemes the secret carries over.
	upd, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Id: ep.GetId(), Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_GITHUB,
	}})
	require.NoError(t, err)
	require.Equal(t, adminv1.VerificationScheme_VERIFICATION_SCHEME_GITHUB, upd.GetEndpoint().GetVerification())
	require.Equal(t, secretID, upd.GetEndpoint().GetSecrets()[0].GetId())

	before := snapshot(t.Context(), t, e.pool)
	bad := map[string]struct {
		req   *adminv1.UpdateEndpointRequest
		field string
	}{
		"to bearer without a secret":     {&adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{Id: ep.GetId(), Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_BEARER}}, "secret"},
		"to stripe without a secret":     {&adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{Id: ep.GetId(), Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_STRIPE}}, "secret"},
		"to none with a secret":          {&adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{Id: ep.GetId(), Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE}, Secret: "0123456789abcdef0"}, "secret"},
		"secret without a scheme change": {&adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{Id: ep.GetId(), Name: "x"}, Secret: "0123456789abcdef0"}, "secret"},
		"to hmac without a header": {&adminv1.UpdateEndpointRequest{
			Endpoint:   &adminv1.Endpoint{Id: ep.GetId(), Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_HMAC_SHA256},
			UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"verification", "signature_header"}},
		}, "endpoint.signature_header"},
		"immutable path":      {&adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{Id: ep.GetId()}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"slug"}}}, "update_mask"},
		"queue pattern":       {&adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{Id: ep.GetId(), Queue: "Orders!"}}, "endpoint.queue"},
		"empty queue":         {&adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{Id: ep.GetId()}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"queue"}}}, "endpoint.queue"},
		"tolerance too large": {&adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{Id: ep.GetId(), ToleranceSeconds: 86401}}, "endpoint.tolerance_seconds"},
		"max body too large":  {&adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{Id: ep.GetId(), MaxBodyBytes: 26214401}}, "endpoint.max_body_bytes"},
		"bad id":              {&adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{Id: "x", Name: "n"}}, "endpoint.id"},
	}
	for name, tc := range bad {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := e.srv.UpdateEndpoint(ctx, tc.req)
			requireInvalid(t, err, tc.field)
		})
	}
	// The parallel subtests run after this function returns: compare then.
	t.Cleanup(func() { require.Equal(t, before, snapshot(context.Background(), t, e.pool)) })
	_, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{Id: uuid.NewString(), Name: "x"}})
	requireCode(t, codes.NotFound, err)
}

func TestUpdateEndpointReplacesSecretsOnSchemeChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	ep, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_GITHUB}, "")

	// To NONE: the secrets go.
	_, err := e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint: &adminv1.Endpoint{Id: ep.GetId()}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"verification"}},
	})
	requireInvalid(t, err, "endpoint.verification") // UNSPECIFIED is not a scheme
	upd, err := e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint: &adminv1.Endpoint{Id: ep.GetId(), Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE},
	})
	require.NoError(t, err)
	require.Empty(t, upd.GetEndpoint().GetSecrets())
	require.False(t, upd.GetEndpoint().GetHasSecret())
	require.Zero(t, count(t, e.pool, "SELECT count(*) FROM endpoint_secrets WHERE endpoint_id = $1", ep.GetId()))

	// From NONE to basic: the caller's secret, hashed.
	upd, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint: &adminv1.Endpoint{Id: ep.GetId(), Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_BASIC},
		Secret:   "ops:a-long-password",
	})
	require.NoError(t, err)
	require.Len(t, upd.GetEndpoint().GetSecrets(), 1)
	require.Equal(t, "ops:…", upd.GetEndpoint().GetSecrets()[0].GetHint())
	e.requireStored(ctx, t, upd.GetEndpoint().GetSecrets()[0].GetId(), "ops:a-long-password", true)
	requireNoSecretMaterial(t, upd, "ops:a-long-password")

	// basic → stripe replaces it with a sealed one.
	upd, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint: &adminv1.Endpoint{Id: ep.GetId(), Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_STRIPE},
		Secret:   "whsec_stripe_signing_secret",
	})
	require.NoError(t, err)
	require.Len(t, upd.GetEndpoint().GetSecrets(), 1)
	require.Equal(t, "k2", upd.GetEndpoint().GetSecretKeyId())
	e.requireStored(ctx, t, upd.GetEndpoint().GetSecrets()[0].GetId(), "whsec_stripe_signing_secret", false)
}

func TestDeleteEndpointCascadesSecrets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	ep, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_SHOPIFY}, "")
	_, err := e.srv.AddEndpointSecret(ctx, &adminv1.AddEndpointSecretRequest{EndpointId: ep.GetId()})
	require.NoError(t, err)
	require.Equal(t, 2, count(t, e.pool, "SELECT count(*) FROM endpoint_secrets WHERE endpoint_id = $1", ep.GetId()))
	_, err = e.srv.DeleteEndpoint(ctx, &adminv1.DeleteEndpointRequest{Id: ep.GetId()})
	require.NoError(t, err)
	require.Zero(t, count(t, e.pool, "SELECT count(*) FROM endpoint_secrets WHERE endpoint_id = $1", ep.GetId()))
	_, err = e.srv.GetEndpoint(ctx, &adminv1.GetEndpointRequest{Id: ep.GetId()})
	requireCode(t, codes.NotFound, err)
	_, err = e.srv.DeleteEndpoint(ctx, &adminv1.DeleteEndpointRequest{Id: ep.GetId()})
	requireCode(t, codes.NotFound, err)
}

func TestCreateEndpointValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	before := snapshot(t.Context(), t, e.pool)
	ep := func(scheme adminv1.VerificationScheme, mod func(*adminv1.Endpoint)) *adminv1.Endpoint {
		out := &adminv1.Endpoint{Queue: "hooks", Verification: scheme}
		if mod != nil {
			mod(out)
		}
		return out
	}
	const (
		none     = adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE
		github   = adminv1.VerificationScheme_VERIFICATION_SCHEME_GITHUB
		hmac     = adminv1.VerificationScheme_VERIFICATION_SCHEME_HMAC_SHA256
		stripe   = adminv1.VerificationScheme_VERIFICATION_SCHEME_STRIPE
		slack    = adminv1.VerificationScheme_VERIFICATION_SCHEME_SLACK
		standard = adminv1.VerificationScheme_VERIFICATION_SCHEME_STANDARD_WEBHOOKS
		bearer   = adminv1.VerificationScheme_VERIFICATION_SCHEME_BEARER
		basic    = adminv1.VerificationScheme_VERIFICATION_SCHEME_BASIC
		twilio   = adminv1.VerificationScheme_VERIFICATION_SCHEME_TWILIO
	)
	cases := map[string]struct {
		req   *adminv1.CreateEndpointRequest
		field string
	}{
		"no endpoint":             {&adminv1.CreateEndpointRequest{}, "endpoint"},
		"queue missing":           {&adminv1.CreateEndpointRequest{Endpoint: ep(none, func(e *adminv1.Endpoint) { e.Queue = "" })}, "endpoint.queue"},
		"queue pattern":           {&adminv1.CreateEndpointRequest{Endpoint: ep(none, func(e *adminv1.Endpoint) { e.Queue = "-Bad" })}, "endpoint.queue"},
		"queue too long":          {&adminv1.CreateEndpointRequest{Endpoint: ep(none, func(e *adminv1.Endpoint) { e.Queue = strings.Repeat("q", 64) })}, "endpoint.queue"},
		"verification missing":    {&adminv1.CreateEndpointRequest{Endpoint: ep(0, nil)}, "endpoint.verification"},
		"verification undefined":  {&adminv1.CreateEndpointRequest{Endpoint: ep(42, nil)}, "endpoint.verification"},
		"tolerance too large":     {&adminv1.CreateEndpointRequest{Endpoint: ep(none, func(e *adminv1.Endpoint) { e.ToleranceSeconds = 86401 })}, "endpoint.tolerance_seconds"},
		"tolerance negative":      {&adminv1.CreateEndpointRequest{Endpoint: ep(none, func(e *adminv1.Endpoint) { e.ToleranceSeconds = -1 })}, "endpoint.tolerance_seconds"},
		"rate limit too large":    {&adminv1.CreateEndpointRequest{Endpoint: ep(none, func(e *adminv1.Endpoint) { e.RateLimitPerSecond = 1000001 })}, "endpoint.rate_limit_per_second"},
		"rate limit negative":     {&adminv1.CreateEndpointRequest{Endpoint: ep(none, func(e *adminv1.Endpoint) { e.RateLimitPerSecond = -1 })}, "endpoint.rate_limit_per_second"},
		"hmac algorithm":          {&adminv1.CreateEndpointRequest{Endpoint: ep(hmac, func(e *adminv1.Endpoint) { e.SignatureHeader = "X-S"; e.HmacAlgorithm = "md5" })}, "endpoint.hmac_algorithm"},
		"hmac encoding":           {&adminv1.CreateEndpointRequest{Endpoint: ep(hmac, func(e *adminv1.Endpoint) { e.SignatureHeader = "X-S"; e.HmacEncoding = "base32" })}, "endpoint.hmac_encoding"},
		"hmac header missing":     {&adminv1.CreateEndpointRequest{Endpoint: ep(hmac, nil)}, "endpoint.signature_header"},
		"header not a token":      {&adminv1.CreateEndpointRequest{Endpoint: ep(hmac, func(e *adminv1.Endpoint) { e.SignatureHeader = "X Sig" })}, "endpoint.signature_header"},
		"prefix too long":         {&adminv1.CreateEndpointRequest{Endpoint: ep(hmac, func(e *adminv1.Endpoint) { e.SignatureHeader = "X-S"; e.SignaturePrefix = strings.Repeat("p", 33) })}, "endpoint.signature_prefix"},
		"max body too large":      {&adminv1.CreateEndpointRequest{Endpoint: ep(none, func(e *adminv1.Endpoint) { e.MaxBodyBytes = 26214401 })}, "endpoint.max_body_bytes"},
		"name too long":           {&adminv1.CreateEndpointRequest{Endpoint: ep(none, func(e *adminv1.Endpoint) { e.Name = strings.Repeat("n", 201) })}, "endpoint.name"},
		"bad agent id":            {&adminv1.CreateEndpointRequest{Endpoint: ep(none, func(e *adminv1.Endpoint) { e.AgentId = "agent-7" })}, "endpoint.agent_id"},
		"bad human id":            {&adminv1.CreateEndpointRequest{Endpoint: ep(none, func(e *adminv1.Endpoint) { e.HumanId = "h" })}, "endpoint.human_id"},
		"secret for none":         {&adminv1.CreateEndpointRequest{Endpoint: ep(none, nil), Secret: "0123456789abcdef0"}, "secret"},
		"basic without secret":    {&adminv1.CreateEndpointRequest{Endpoint: ep(basic, nil)}, "secret"},
		"basic without colon":     {&adminv1.CreateEndpointRequest{Endpoint: ep(basic, nil), Secret: "no-colon-in-this-one"}, "secret"},
		"basic without user":      {&adminv1.CreateEndpointRequest{Endpoint: ep(basic, nil), Secret: ":only-a-password-here"}, "secret"},
		"secret too short":        {&adminv1.CreateEndpointRequest{Endpoint: ep(github, nil), Secret: "short"}, "secret"},
		"secret too long":         {&adminv1.CreateEndpointRequest{Endpoint: ep(github, nil), Secret: strings.Repeat("s", 1025)}, "secret"},
		"whsec not base64":        {&adminv1.CreateEndpointRequest{Endpoint: ep(standard, nil), Secret: "whsec_not*base64*at*all"}, "secret"},
		"standard secret as text": {&adminv1.CreateEndpointRequest{Endpoint: ep(standard, nil), Secret: "my-own-secret-as-text"}, "secret"},
		"standard whsk_ key":      {&adminv1.CreateEndpointRequest{Endpoint: ep(standard, nil), Secret: "whsk_VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk="}, "secret"},
		"public url not http":     {&adminv1.CreateEndpointRequest{Endpoint: ep(twilio, func(e *adminv1.Endpoint) { e.PublicUrl = "ftp://hooks.example/x" }), Secret: "0123456789abcdef0123"}, "endpoint.public_url"},
		"public url with a query": {&adminv1.CreateEndpointRequest{Endpoint: ep(twilio, func(e *adminv1.Endpoint) { e.PublicUrl = "https://hooks.example/x?a=1" }), Secret: "0123456789abcdef0123"}, "endpoint.public_url"},
		"public url too long": {&adminv1.CreateEndpointRequest{Endpoint: ep(twilio, func(e *adminv1.Endpoint) {
			e.PublicUrl = "https://hooks.example/" + strings.Repeat("p", 2048)
		}), Secret: "0123456789abcdef0123"}, "endpoint.public_url"},
		"whpk wrong size":        {&adminv1.CreateEndpointRequest{Endpoint: ep(standard, nil), Secret: "whpk_" + base64.StdEncoding.EncodeToString(make([]byte, 16))}, "secret"},
		"bearer with whitespace": {&adminv1.CreateEndpointRequest{Endpoint: ep(bearer, nil), Secret: "token with spaces inside"}, "secret"},
		"bearer control char":    {&adminv1.CreateEndpointRequest{Endpoint: ep(bearer, nil), Secret: "token\x00with-a-nul-byte"}, "secret"},
		"two topic sources":      {&adminv1.CreateEndpointRequest{Endpoint: ep(none, func(e *adminv1.Endpoint) { e.TopicHeader = "X-T"; e.TopicPointer = "/t" })}, "endpoint.topic_pointer"},
		"topic header not token": {&adminv1.CreateEndpointRequest{Endpoint: ep(none, func(e *adminv1.Endpoint) { e.TopicHeader = "X T" })}, "endpoint.topic_header"},
		"topic pointer no slash": {&adminv1.CreateEndpointRequest{Endpoint: ep(none, func(e *adminv1.Endpoint) { e.TopicPointer = "event/type" })}, "endpoint.topic_pointer"},
		"topic pointer bad ~":    {&adminv1.CreateEndpointRequest{Endpoint: ep(none, func(e *adminv1.Endpoint) { e.TopicPointer = "/a~2" })}, "endpoint.topic_pointer"},
		"topic pointer too long": {&adminv1.CreateEndpointRequest{Endpoint: ep(none, func(e *adminv1.Endpoint) { e.TopicPointer = "/" + strings.Repeat("p", 255) })}, "endpoint.topic_pointer"},
		"dedup window too large": {&adminv1.CreateEndpointRequest{Endpoint: ep(none, func(e *adminv1.Endpoint) { e.BodyDedupWindowSeconds = proto.Int32(604801) })}, "endpoint.body_dedup_window_seconds"},
		"dedup window negative":  {&adminv1.CreateEndpointRequest{Endpoint: ep(none, func(e *adminv1.Endpoint) { e.BodyDedupWindowSeconds = proto.Int32(-1) })}, "endpoint.body_dedup_window_seconds"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := e.srv.CreateEndpoint(ctx, tc.req)
			requireInvalid(t, err, tc.field)
		})
	}
	t.Run("unknown agent", func(t *testing.T) {
		t.Parallel()
		_, err := e.srv.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Endpoint: ep(none, func(e *adminv1.Endpoint) { e.AgentId = uuid.NewString() })})
		requireCode(t, codes.NotFound, err)
	})
	t.Run("unknown human", func(t *testing.T) {
		t.Parallel()
		_, err := e.srv.CreateEndpoint(e.rootCtx(t), &adminv1.CreateEndpointRequest{Endpoint: ep(none, func(e *adminv1.Endpoint) { e.HumanId = uuid.NewString() })})
		requireCode(t, codes.NotFound, err)
	})
	t.Cleanup(func() { require.Equal(t, before, snapshot(context.Background(), t, e.pool)) })
}
