package sources

import (
	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/services/ingest/verify"
)

// schemes is the one table between the contract's verification schemes and
// the names endpoints.verification stores (verify.Scheme).
var schemes = map[adminv1.VerificationScheme]verify.Scheme{
	adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE:              verify.SchemeNone,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_HMAC_SHA256:       verify.SchemeHMAC,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_GITHUB:            verify.SchemeGitHub,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_STRIPE:            verify.SchemeStripe,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_SLACK:             verify.SchemeSlack,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_STANDARD_WEBHOOKS: verify.SchemeStandardWebhooks,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_BEARER:            verify.SchemeBearer,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_SHOPIFY:           verify.SchemeShopify,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_BASIC:             verify.SchemeBasic,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_TWILIO:            verify.SchemeTwilio,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_ZOOM:              verify.SchemeZoom,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_META:              verify.SchemeMeta,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_X:                 verify.SchemeX,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_MS_GRAPH:          verify.SchemeMSGraph,
}

// SchemeOf is the scheme a contract value names; false for UNSPECIFIED and
// values this server does not know.
func SchemeOf(v adminv1.VerificationScheme) (verify.Scheme, bool) {
	s, ok := schemes[v]
	return s, ok
}

// SchemeEnum is the contract value of a stored scheme (UNSPECIFIED for one
// this server does not know).
func SchemeEnum(s verify.Scheme) adminv1.VerificationScheme { return enumOf(schemes, s) }

// hashedScheme reports whether a scheme's secrets are only compared, so
// stored as SHA-256 digests rather than sealed.
func hashedScheme(s verify.Scheme) bool { return s == verify.SchemeBearer || s == verify.SchemeBasic }

// providerIssued reports whether the server never generates the secret: the
// provider issues it (Stripe, Slack, Twilio's auth token, Zoom, Meta, X), or
// it is a password (basic). Graph's clientState is the subscriber's choice,
// so generated.
func providerIssued(s verify.Scheme) bool {
	return s == verify.SchemeBasic || awaitsProviderSecret(s)
}

// awaitsProviderSecret reports whether an endpoint of scheme may be created
// without its secret: the provider issues it, and Stripe (like Svix-based
// senders) issues it only once it knows the endpoint's URL, which exists
// only once the endpoint does. Such an endpoint refuses every delivery
// (401) until AddEndpointSecret gives it one.
func awaitsProviderSecret(s verify.Scheme) bool {
	switch s {
	case verify.SchemeStripe, verify.SchemeSlack, verify.SchemeTwilio, verify.SchemeZoom, verify.SchemeMeta, verify.SchemeX:
		return true
	}
	return false
}

// Adapter kinds and their names in adapters.kind.
const (
	KindWebhook     = "webhook"
	KindRedisStream = "redis_stream"
)

var kinds = map[adminv1.AdapterKind]string{
	adminv1.AdapterKind_ADAPTER_KIND_WEBHOOK:      KindWebhook,
	adminv1.AdapterKind_ADAPTER_KIND_REDIS_STREAM: KindRedisStream,
}

// KindOf is the adapter kind a contract value names; false for UNSPECIFIED.
func KindOf(v adminv1.AdapterKind) (string, bool) {
	k, ok := kinds[v]
	return k, ok
}

// KindEnum is the contract value of a stored kind.
func KindEnum(kind string) adminv1.AdapterKind { return enumOf(kinds, kind) }

// enumOf inverts a contract table; the zero value (UNSPECIFIED) when absent.
func enumOf[E, V comparable](table map[E]V, v V) E {
	for k, name := range table {
		if name == v {
			return k
		}
	}
	var unspecified E
	return unspecified
}
