package verify

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// ErrUnverified is wrapped by every verification failure.
var ErrUnverified = errors.New("verify: request not verified")

// ErrTimestamp is matched (errors.Is) by a failure whose signed timestamp
// was outside the tolerance: too old (a replay) or too far in the future.
var ErrTimestamp = errors.New("verify: timestamp outside the tolerance")

// Scheme names a webhook authentication scheme.
type Scheme string

// Supported schemes.
const (
	SchemeNone             Scheme = "none"
	SchemeStandardWebhooks Scheme = "standard_webhooks"
	SchemeGitHub           Scheme = "github"
	SchemeStripe           Scheme = "stripe"
	SchemeSlack            Scheme = "slack"
	SchemeShopify          Scheme = "shopify"
	SchemeHMAC             Scheme = "hmac"
	SchemeBearer           Scheme = "bearer"
	SchemeBasic            Scheme = "basic"
	SchemeTwilio           Scheme = "twilio"
	SchemeZoom             Scheme = "zoom"
	SchemeMeta             Scheme = "meta"
	SchemeX                Scheme = "x"
	SchemeMSGraph          Scheme = "msgraph"
)

// DefaultTolerance bounds how far a signed timestamp may drift from the
// receiver's clock, in either direction, when Config.Tolerance is zero.
const DefaultTolerance = 5 * time.Minute

// Request is what a verifier sees: the raw body bytes exactly as received and
// the headers, before anything parses either.
type Request struct {
	Body   []byte
	Header http.Header
	// Now is the receiver's clock; the zero value means time.Now().
	Now time.Time
	// Method and Query are the request's HTTP method ("" means POST) and
	// decoded query string: only handshakes read them (Handshaker); a
	// scheme that signs the query reads it in URL.
	Method string
	Query  url.Values
	// URL is the absolute URL the sender requested, query included, for
	// the schemes that sign it (twilio); "" where none does.
	URL string
}

// Result describes a successfully verified request.
type Result struct {
	Scheme Scheme
	// DeliveryID is the provider's delivery/message id when the request
	// carries one ("" otherwise).
	DeliveryID string
	// DeliveryIDSigned reports whether the signature covers DeliveryID; an
	// unsigned id can be replayed with a different value, so it must not be
	// trusted for deduplication on its own.
	DeliveryIDSigned bool
	// Timestamp is the signed timestamp, when the scheme has one.
	Timestamp time.Time
	// Topic is the provider's event type ("" when none): set by Describe,
	// never by Verify.
	Topic string
}

// Config selects and parameterises a scheme.
type Config struct {
	Scheme Scheme
	// Secrets holds every active secret; a signature matching any of them
	// passes, which is what makes rotation possible without downtime.
	//   - standard_webhooks v1: "whsec_<base64>", or the same base64 without
	//     the prefix (as the reference libraries read it: never the raw
	//     text); v1a: ed25519 public keys, "whpk_<base64 of 32 bytes>".
	//   - github, stripe, slack, shopify, hmac: the raw secret bytes.
	//   - twilio: the account's auth token.
	//   - zoom: the app's secret token; meta: the app secret; x: the
	//     consumer secret; msgraph: the subscription's clientState.
	Secrets [][]byte
	// SecretHashes holds, for bearer and basic only, SHA-256 digests of the
	// accepted credentials (bearer: the token; basic: "user:password").
	SecretHashes [][]byte
	// Tolerance bounds timestamp drift in both directions; zero means
	// DefaultTolerance.
	Tolerance time.Duration
	// VerifyTokenHash is, for meta only, the SHA-256 digest of the verify
	// token the endpoint's owner chose and gave Meta: the subscription
	// handshake (GET ?hub.verify_token=…) must present it.
	VerifyTokenHash []byte
	// Header, Algorithm ("sha256"|"sha512"), Encoding ("hex"|"base64") and an
	// optional Prefix (stripped before decoding) configure the generic "hmac"
	// scheme.
	Header, Algorithm, Encoding, Prefix string
}

// Verifier authenticates one request.
type Verifier interface {
	Verify(r Request) (Result, error)
}

// New validates cfg and returns the matching Verifier.
func New(cfg Config) (Verifier, error) {
	if cfg.Tolerance < 0 {
		return nil, errors.New("verify: negative tolerance")
	}
	tolerance := cfg.Tolerance
	if tolerance == 0 {
		tolerance = DefaultTolerance
	}
	switch cfg.Scheme {
	case SchemeNone:
		return noneVerifier{}, nil
	case SchemeBearer, SchemeBasic:
		return newCredentialVerifier(cfg)
	}
	if len(cfg.SecretHashes) > 0 {
		return nil, fmt.Errorf("verify: scheme %q does not use SecretHashes", cfg.Scheme)
	}
	if len(cfg.VerifyTokenHash) > 0 && cfg.Scheme != SchemeMeta {
		return nil, fmt.Errorf("verify: scheme %q does not use VerifyTokenHash", cfg.Scheme)
	}
	switch cfg.Scheme {
	case SchemeStandardWebhooks:
		return newStandardVerifier(cfg.Secrets, tolerance)
	case SchemeGitHub, SchemeStripe, SchemeSlack, SchemeShopify, SchemeTwilio:
		secrets, err := copySecrets(cfg.Scheme, cfg.Secrets)
		if err != nil {
			return nil, err
		}
		switch cfg.Scheme {
		case SchemeGitHub:
			return githubVerifier{secrets: secrets}, nil
		case SchemeStripe:
			return stripeVerifier{secrets: secrets, tolerance: tolerance}, nil
		case SchemeSlack:
			return slackVerifier{secrets: secrets, tolerance: tolerance}, nil
		case SchemeTwilio:
			return twilioVerifier{secrets: secrets}, nil
		default:
			return shopifyVerifier{secrets: secrets}, nil
		}
	case SchemeHMAC:
		return newGenericVerifier(cfg)
	case SchemeZoom, SchemeMeta, SchemeX, SchemeMSGraph:
		return newHandshakeVerifier(cfg, tolerance)
	default:
		return nil, fmt.Errorf("verify: unknown scheme %q", cfg.Scheme)
	}
}

// noneVerifier exists so endpoints that deliberately accept unsigned traffic
// still go through the same code path and are visible as such in Result.
type noneVerifier struct{}

func (noneVerifier) Verify(Request) (Result, error) {
	return Result{Scheme: SchemeNone}, nil
}
