package sources

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/services/ingest/verify"
)

func violation(t *testing.T, err error) (codes.Code, string) {
	t.Helper()
	st, _ := apierr.ToStatus(err)
	return st.Code(), st.Message()
}

// TestCheckEndpoint: the merged fields of an endpoint are refused with the
// field to fix, and defaults make a minimal endpoint valid.
func TestCheckEndpoint(t *testing.T) {
	t.Parallel()
	ok := EndpointFields{Queue: "hooks", Verification: verify.SchemeGitHub}
	applyDefaults(&ok)
	require.NoError(t, checkEndpoint(ok))
	require.EqualValues(t, defaultMaxBodyBytes, ok.MaxBodyBytes)

	header := "X Bad"
	cases := map[string]struct {
		mutate func(*EndpointFields)
		msg    string
	}{
		"no queue":        {func(f *EndpointFields) { f.Queue = "" }, "invalid endpoint.queue: is required"},
		"bad queue":       {func(f *EndpointFields) { f.Queue = "Hooks" }, "invalid endpoint.queue: must match"},
		"hmac no header":  {func(f *EndpointFields) { f.Verification = verify.SchemeHMAC }, "invalid endpoint.signature_header: is required"},
		"bad header name": {func(f *EndpointFields) { f.DeliveryIDHeader = &header }, "invalid endpoint.delivery_id_header: must be an HTTP header name"},
		"big body":        {func(f *EndpointFields) { f.MaxBodyBytes = maxMaxBodyBytes + 1 }, "invalid endpoint.max_body_bytes"},
		"algorithm":       {func(f *EndpointFields) { f.HmacAlgorithm = "md5" }, "invalid endpoint.hmac_algorithm"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := ok
			tc.mutate(&f)
			code, msg := violation(t, checkEndpoint(f))
			require.Equal(t, codes.InvalidArgument, code)
			require.Contains(t, msg, tc.msg)
		})
	}
}

// TestSecretFor: a caller's secret is checked for its scheme, a missing
// one is generated only where the scheme allows.
func TestSecretFor(t *testing.T) {
	t.Parallel()
	gen, err := secretFor(verify.SchemeStandardWebhooks, "", true)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(gen, "whsec_"))
	gen, err = secretFor(verify.SchemeBearer, "", true)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(gen, "sbw_"))

	for _, tc := range []struct {
		scheme verify.Scheme
		given  string
		msg    string
	}{
		{verify.SchemeStripe, "", "is required for VERIFICATION_SCHEME_STRIPE"}, // AddEndpointSecret: never generated
		{verify.SchemeNone, "0123456789abcdef", "must be empty when verification is VERIFICATION_SCHEME_NONE"},
		{verify.SchemeGitHub, "short", "must be 16–1024 characters"},
		{verify.SchemeStandardWebhooks, "whsec_not*base64*at*all", `a "whsec_" secret must be followed by standard base64`},
		{verify.SchemeStandardWebhooks, "my-own-secret-as-text", `must be "whsec_<base64>", "whpk_<base64>" or standard base64`},
		{verify.SchemeStandardWebhooks, "whsk_VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk=", `"whsk_" signing key`},
		{verify.SchemeTwilio, "", "is required for VERIFICATION_SCHEME_TWILIO"},
		{verify.SchemeBearer, "token with spaces inside", "must not contain whitespace"},
		{verify.SchemeBasic, "no-colon-in-this-one", `must be "user:password"`},
	} {
		_, err := secretFor(tc.scheme, tc.given, true)
		code, msg := violation(t, err)
		require.Equal(t, codes.InvalidArgument, code, tc.scheme)
		require.Contains(t, msg, tc.msg, tc.scheme)
	}
	for _, given := range []string{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"} {
		got, err := secretFor(verify.SchemeStandardWebhooks, given, true)
		require.NoError(t, err, "base64, with or without whsec_")
		require.Equal(t, given, got)
	}
	_, err = secretFor(verify.SchemeGitHub, "", false)
	require.ErrorContains(t, err, "is required", "an update never generates a secret")
}

// TestHint tells secrets apart without revealing them.
func TestHint(t *testing.T) {
	t.Parallel()
	require.Equal(t, "whsec_…Q2xw", hint(verify.SchemeStandardWebhooks, "whsec_AAAAAAAAQ2xw"))
	require.Equal(t, "…wxyz", hint(verify.SchemeGitHub, "abcdefghijklmnopqrstuvwxyz"))
	require.Equal(t, "alice:…", hint(verify.SchemeBasic, "alice:secret-password"))
}

// TestContractTables: every contract value maps to a stored name and back.
func TestContractTables(t *testing.T) {
	t.Parallel()
	for enum, scheme := range schemes {
		got, ok := SchemeOf(enum)
		require.True(t, ok)
		require.Equal(t, scheme, got)
		require.Equal(t, enum, SchemeEnum(scheme))
	}
	for n := range adminv1.VerificationScheme_name {
		if v := adminv1.VerificationScheme(n); v != adminv1.VerificationScheme_VERIFICATION_SCHEME_UNSPECIFIED {
			_, ok := SchemeOf(v)
			require.True(t, ok, "%s has a stored name", v)
		}
	}
	for enum, kind := range kinds {
		require.Equal(t, enum, KindEnum(kind))
	}
	require.Zero(t, SchemeEnum("no such scheme"))
}

// TestCheckPublicURL: an endpoint's public URL is an absolute http(s) URL
// without a query, fragment or credentials, at most 2048 characters.
func TestCheckPublicURL(t *testing.T) {
	t.Parallel()
	for _, good := range []string{
		"https://hooks.example.com/hooks/abcdefghijklmnop", "http://10.0.0.7:8080/hooks/x", "https://[::1]:8443/hooks/x",
		"https://h.example/" + strings.Repeat("p", maxPublicURLLen-len("https://h.example/")),
	} {
		f := EndpointFields{Queue: "hooks", Verification: verify.SchemeTwilio, PublicURL: &good}
		applyDefaults(&f)
		require.NoError(t, checkEndpoint(f), good)
	}
	for bad, msg := range map[string]string{
		"":                             "must be an absolute URL",
		"/hooks/x":                     "must be an absolute URL",
		"hooks.example.com/hooks/x":    "must be an absolute URL",
		"ftp://hooks.example.com/x":    "must start with",
		"HTTPS://hooks.example.com/x":  "must start with",
		"https:hooks.example.com/x":    "must be an absolute URL",
		"https:///hooks/x":             "must name a host",
		"https://u:p@hooks.example/x":  "must not carry credentials",
		"https://hooks.example/x?a=1":  "must not have a query",
		"https://hooks.example/x?":     "must not have a query",
		"https://hooks.example/x#frag": "must not have a query or fragment",
		"https://hooks.example/a b":    "must not contain spaces",
		"https://h.example/" + strings.Repeat("p", maxPublicURLLen): "must be at most 2048",
	} {
		f := EndpointFields{Queue: "hooks", Verification: verify.SchemeTwilio, PublicURL: &bad}
		applyDefaults(&f)
		code, got := violation(t, checkEndpoint(f))
		require.Equal(t, codes.InvalidArgument, code, bad)
		require.Contains(t, got, "invalid endpoint.public_url: "+msg, bad)
	}
}
