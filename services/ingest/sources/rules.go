package sources

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard/switchboard/pkg/textcheck"
	"github.com/switchboard/switchboard/services/ingest/verify"
)

// Endpoint defaults and limits, as the contract and the schema state them.
const (
	defaultMaxBodyBytes = 1 << 20
	maxMaxBodyBytes     = 25 << 20
	defaultTolerance    = 300
	maxTolerance        = 86400
	maxRateLimit        = 1000000
	maxSignaturePrefix  = 32
	maxHeaderLen        = 128
	maxEndpointNameLen  = 200
	minSecretLen        = 16
	maxSecretLen        = 1024
	maxClientStateLen   = 128 // Microsoft Graph's limit on a subscription's clientState
	maxPreviousValidFor = 7 * 24 * time.Hour
	maxActiveSecrets    = 10
	maxCursorLen        = 255
)

// applyDefaults fills the columns whose zero value means "the default".
func applyDefaults(f *EndpointFields) {
	if f.MaxBodyBytes == 0 {
		f.MaxBodyBytes = defaultMaxBodyBytes
	}
	if f.HmacAlgorithm == "" {
		f.HmacAlgorithm = "sha256"
	}
	if f.HmacEncoding == "" {
		f.HmacEncoding = "hex"
	}
	if f.ToleranceSeconds == 0 {
		f.ToleranceSeconds = defaultTolerance
	}
}

// checkEndpoint checks the merged fields of a created or updated endpoint:
// the contract's rules (protovalidate runs them in the interceptor too) and
// those that span fields.
func checkEndpoint(f EndpointFields) error {
	switch {
	case f.Queue == "":
		return invalid("endpoint.queue", "is required")
	case utf8.RuneCountInString(f.Name) > maxEndpointNameLen:
		return invalid("endpoint.name", "must be at most 200 characters")
	case textcheck.Label(f.Name) != nil:
		return invalid("endpoint.name", textcheck.Label(f.Name).Error())
	case !textcheck.QueueName(f.Queue):
		return invalid("endpoint.queue", "must match ^[a-z0-9][a-z0-9._-]{0,62}$")
	case f.SignatureHeader != nil && len(*f.SignatureHeader) > maxHeaderLen:
		return invalid("endpoint.signature_header", "must be at most 128 characters")
	case f.DeliveryIDHeader != nil && len(*f.DeliveryIDHeader) > maxHeaderLen:
		return invalid("endpoint.delivery_id_header", "must be at most 128 characters")
	case f.MaxBodyBytes < 1 || f.MaxBodyBytes > maxMaxBodyBytes:
		return invalid("endpoint.max_body_bytes", "must be between 1 and 26214400")
	case f.HmacAlgorithm != "sha256" && f.HmacAlgorithm != "sha512":
		return invalid("endpoint.hmac_algorithm", `must be "sha256" or "sha512"`)
	case f.HmacEncoding != "hex" && f.HmacEncoding != "base64":
		return invalid("endpoint.hmac_encoding", `must be "hex" or "base64"`)
	case utf8.RuneCountInString(f.SignaturePrefix) > maxSignaturePrefix:
		return invalid("endpoint.signature_prefix", "must be at most 32 characters")
	case f.ToleranceSeconds < 1 || f.ToleranceSeconds > maxTolerance:
		return invalid("endpoint.tolerance_seconds", "must be between 1 and 86400")
	case f.RateLimitPerSecond < 0 || f.RateLimitPerSecond > maxRateLimit:
		return invalid("endpoint.rate_limit_per_second", "must be between 0 and 1000000")
	case f.Verification == verify.SchemeHMAC && f.SignatureHeader == nil:
		return invalid("endpoint.signature_header", "is required for VERIFICATION_SCHEME_HMAC_SHA256")
	}
	if err := checkVerifyToken(f); err != nil {
		return err
	}
	if err := checkPublicURL(f.PublicURL); err != nil {
		return err
	}
	for _, h := range []*string{f.SignatureHeader, f.DeliveryIDHeader} {
		if h != nil && !headerName(*h) {
			field := "endpoint.signature_header"
			if h == f.DeliveryIDHeader {
				field = "endpoint.delivery_id_header"
			}
			return invalid(field, "must be an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)")
		}
	}
	if err := checkTopicFields(f); err != nil {
		return err
	}
	return checkRoutes(f.Routes)
}

// checkAdapter checks the merged fields of a created or updated adapter of
// kind: the contract's rules (protovalidate runs them in the interceptor
// too) and those that depend on the kind.
func checkAdapter(kind string, f AdapterFields) error {
	switch {
	case f.Name == "":
		return invalid("adapter.name", "is required")
	case f.Queue == "":
		return invalid("adapter.queue", "is required")
	case !textcheck.QueueName(f.Name):
		return invalid("adapter.name", "must match ^[a-z0-9][a-z0-9._-]{0,62}$")
	case !textcheck.QueueName(f.Queue):
		return invalid("adapter.queue", "must match ^[a-z0-9][a-z0-9._-]{0,62}$")
	case kind == KindWebhook && f.EndpointID == nil:
		return invalid("adapter.endpoint_id", "is required for ADAPTER_KIND_WEBHOOK")
	case kind == KindRedisStream && f.EndpointID != nil:
		return invalid("adapter.endpoint_id", "must be empty for ADAPTER_KIND_REDIS_STREAM")
	case f.Cursor != nil && kind == KindWebhook:
		return invalid("adapter.cursor", "must be empty for ADAPTER_KIND_WEBHOOK")
	case f.Cursor != nil && (utf8.RuneCountInString(*f.Cursor) > maxCursorLen || !utf8.ValidString(*f.Cursor)):
		return invalid("adapter.cursor", "must be at most 255 characters of valid UTF-8")
	}
	return nil
}

// headerName reports whether h is an RFC 9110 field name (a token).
func headerName(h string) bool {
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}
