package admin

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/services/admin/internal/store"
)

// Endpoint defaults and limits, as the contract and the schema state them.
const (
	defaultMaxBodyBytes  = 1 << 20
	maxMaxBodyBytes      = 25 << 20
	defaultTolerance     = 300
	maxTolerance         = 86400
	maxRateLimit         = 1000000
	maxSignaturePrefix   = 32
	maxHeaderLen         = 128
	maxEndpointNameLen   = 200
	minSecretLen         = 16
	maxSecretLen         = 1024
	maxPreviousValidFor  = 7 * 24 * time.Hour
	maxActiveSecrets     = 10
	slugLen              = 24 // characters: base64url of 18 random bytes
	slugAttempts         = 5
	generatedSecretBytes = 32
)

// endpointFields are UpdateEndpointRequest.update_mask's allowed paths.
var endpointFields = []string{
	"name", "agent_id", "queue", "verification", "signature_header", "delivery_id_header", "max_body_bytes",
	"enabled", "hmac_algorithm", "hmac_encoding", "signature_prefix", "tolerance_seconds", "rate_limit_per_second",
}

// Verification schemes and their names in endpoints.verification.
const (
	schemeNone     = "none"
	schemeHMAC     = "hmac"
	schemeGitHub   = "github"
	schemeStripe   = "stripe"
	schemeSlack    = "slack"
	schemeStandard = "standard_webhooks"
	schemeBearer   = "bearer"
	schemeShopify  = "shopify"
	schemeBasic    = "basic"
)

var schemeNames = map[adminv1.VerificationScheme]string{
	adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE:              schemeNone,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_HMAC_SHA256:       schemeHMAC,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_GITHUB:            schemeGitHub,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_STRIPE:            schemeStripe,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_SLACK:             schemeSlack,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_STANDARD_WEBHOOKS: schemeStandard,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_BEARER:            schemeBearer,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_SHOPIFY:           schemeShopify,
	adminv1.VerificationScheme_VERIFICATION_SCHEME_BASIC:             schemeBasic,
}

// schemeEnum is the inverse of schemeNames.
func schemeEnum(name string) adminv1.VerificationScheme {
	for k, v := range schemeNames {
		if v == name {
			return k
		}
	}
	return adminv1.VerificationScheme_VERIFICATION_SCHEME_UNSPECIFIED
}

// hashedScheme reports whether a scheme's secrets are only compared, so
// stored as SHA-256 digests rather than sealed.
func hashedScheme(scheme string) bool { return scheme == schemeBearer || scheme == schemeBasic }

// providerIssued reports whether the caller must supply the secret: the
// provider issues it (Stripe, Slack), or it is a password (basic).
func providerIssued(scheme string) bool {
	return scheme == schemeStripe || scheme == schemeSlack || scheme == schemeBasic
}

var strictBase64 = base64.StdEncoding.Strict()

// CreateEndpoint vends a webhook URL for a human (the caller's own when
// endpoint.human_id is empty; only an administrator may name another) with
// its first secret, which is returned here once.
func (s *Server) CreateEndpoint(ctx context.Context, req *adminv1.CreateEndpointRequest) (*adminv1.CreateEndpointResponse, error) {
	p, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	in := req.GetEndpoint()
	if in == nil {
		return nil, invalid("endpoint", "is required")
	}
	humanID := p.HumanID
	if in.GetHumanId() != "" {
		if humanID, err = parseID("endpoint.human_id", in.GetHumanId()); err != nil {
			return nil, err
		}
	}
	scheme, ok := schemeNames[in.GetVerification()]
	if !ok {
		return nil, invalid("endpoint.verification", "is required (a defined scheme other than UNSPECIFIED)")
	}
	f := store.EndpointFields{
		Name: in.GetName(), Queue: in.GetQueue(), Verification: scheme,
		SignatureHeader: optionalString(in.GetSignatureHeader()), DeliveryIDHeader: optionalString(in.GetDeliveryIdHeader()),
		MaxBodyBytes: in.GetMaxBodyBytes(), Enabled: in.Enabled == nil || in.GetEnabled(),
		HmacAlgorithm: in.GetHmacAlgorithm(), HmacEncoding: in.GetHmacEncoding(), SignaturePrefix: in.GetSignaturePrefix(),
		ToleranceSeconds: in.GetToleranceSeconds(), RateLimitPerSecond: in.GetRateLimitPerSecond(),
	}
	if f.AgentID, err = parseOptionalID("endpoint.agent_id", in.GetAgentId()); err != nil {
		return nil, err
	}
	if f.Queue == "" {
		return nil, invalid("endpoint.queue", "is required")
	}
	applyDefaults(&f)
	if err := checkEndpoint(f); err != nil {
		return nil, err
	}
	plain, err := s.secretFor(scheme, req.GetSecret(), "secret", true)
	if err != nil {
		return nil, err
	}
	var secret *store.NewSecret
	if scheme != schemeNone {
		ns, err := s.seal(scheme, plain)
		if err != nil {
			return nil, err
		}
		secret = &ns
	}
	for attempt := 1; ; attempt++ {
		slug, err := newSlug()
		if err != nil {
			return nil, err
		}
		e, err := s.store.CreateEndpoint(ctx, t, humanID, slug, f, secret)
		if errors.Is(err, store.ErrSlugTaken) && attempt < slugAttempts {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &adminv1.CreateEndpointResponse{Endpoint: endpointProto(e), Secret: plain}, nil
	}
}

// GetEndpoint returns one endpoint of a human the caller may act for,
// describing its secrets but never returning them.
func (s *Server) GetEndpoint(ctx context.Context, req *adminv1.GetEndpointRequest) (*adminv1.GetEndpointResponse, error) {
	_, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	id, err := parseID("id", req.GetId())
	if err != nil {
		return nil, err
	}
	e, err := s.store.GetEndpoint(ctx, t, id)
	if err != nil {
		return nil, err
	}
	return &adminv1.GetEndpointResponse{Endpoint: endpointProto(e)}, nil
}

// ListEndpoints lists endpoints oldest first. An empty human_id means the
// caller's own human, or every human for an administrator; a
// non-administrator naming another human gets an empty page.
func (s *Server) ListEndpoints(ctx context.Context, req *adminv1.ListEndpointsRequest) (*adminv1.ListEndpointsResponse, error) {
	_, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	humanID, err := parseOptionalID("human_id", req.GetHumanId())
	if err != nil {
		return nil, err
	}
	limit, err := pageSize(req.GetPageSize())
	if err != nil {
		return nil, err
	}
	scope := "endpoints|" + idString(humanID)
	after, err := decodePageToken(req.GetPageToken(), scope)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.ListEndpoints(ctx, t, humanID, after, limit+1)
	if err != nil {
		return nil, err
	}
	rows, next := page(rows, limit, scope, func(e store.Endpoint) (time.Time, uuid.UUID) { return e.CreatedAt, e.ID })
	out := &adminv1.ListEndpointsResponse{Endpoints: make([]*adminv1.Endpoint, len(rows)), NextPageToken: next}
	for i, e := range rows {
		out.Endpoints[i] = endpointProto(e)
	}
	return out, nil
}

// UpdateEndpoint changes the fields named in update_mask of an endpoint of
// a human the caller may act for. The slug and human_id never change; the
// secrets only with a verification change (see UpdateEndpointRequest.secret).
func (s *Server) UpdateEndpoint(ctx context.Context, req *adminv1.UpdateEndpointRequest) (*adminv1.UpdateEndpointResponse, error) {
	_, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	in := req.GetEndpoint()
	id, err := parseID("endpoint.id", in.GetId())
	if err != nil {
		return nil, err
	}
	fields, err := updateFields(req.GetUpdateMask(), endpointFields, nil, slices.Concat(
		presentIf(in.GetName() != "", "name"),
		presentIf(in.GetAgentId() != "", "agent_id"),
		presentIf(in.GetQueue() != "", "queue"),
		presentIf(in.GetVerification() != adminv1.VerificationScheme_VERIFICATION_SCHEME_UNSPECIFIED, "verification"),
		presentIf(in.GetSignatureHeader() != "", "signature_header"),
		presentIf(in.GetDeliveryIdHeader() != "", "delivery_id_header"),
		presentIf(in.GetMaxBodyBytes() != 0, "max_body_bytes"),
		presentIf(in.Enabled != nil, "enabled"),
		presentIf(in.GetHmacAlgorithm() != "", "hmac_algorithm"),
		presentIf(in.GetHmacEncoding() != "", "hmac_encoding"),
		presentIf(in.GetSignaturePrefix() != "", "signature_prefix"),
		presentIf(in.GetToleranceSeconds() != 0, "tolerance_seconds"),
		presentIf(in.GetRateLimitPerSecond() != 0, "rate_limit_per_second"),
	))
	if err != nil {
		return nil, err
	}
	// Everything that does not depend on the stored row is checked before
	// the transaction starts.
	var agentID *uuid.UUID
	if fields["agent_id"] {
		if agentID, err = parseOptionalID("endpoint.agent_id", in.GetAgentId()); err != nil {
			return nil, err
		}
	}
	if fields["queue"] && in.GetQueue() == "" {
		return nil, invalid("endpoint.queue", "is required")
	}
	var newScheme string
	if fields["verification"] {
		var ok bool
		if newScheme, ok = schemeNames[in.GetVerification()]; !ok {
			return nil, invalid("endpoint.verification", "must be a defined scheme other than UNSPECIFIED")
		}
	}
	if req.GetSecret() != "" && !fields["verification"] {
		return nil, invalid("secret", "is only accepted with a verification change; rotate secrets with AddEndpointSecret")
	}
	e, err := s.store.UpdateEndpoint(ctx, t, id, func(cur store.Endpoint) (store.EndpointFields, store.SecretChange, error) {
		f := cur.EndpointFields
		if fields["name"] {
			f.Name = in.GetName()
		}
		if fields["agent_id"] {
			f.AgentID = agentID
		}
		if fields["queue"] {
			f.Queue = in.GetQueue()
		}
		if fields["signature_header"] {
			f.SignatureHeader = optionalString(in.GetSignatureHeader())
		}
		if fields["delivery_id_header"] {
			f.DeliveryIDHeader = optionalString(in.GetDeliveryIdHeader())
		}
		if fields["max_body_bytes"] {
			f.MaxBodyBytes = in.GetMaxBodyBytes()
		}
		if fields["enabled"] {
			f.Enabled = in.GetEnabled()
		}
		if fields["hmac_algorithm"] {
			f.HmacAlgorithm = in.GetHmacAlgorithm()
		}
		if fields["hmac_encoding"] {
			f.HmacEncoding = in.GetHmacEncoding()
		}
		if fields["signature_prefix"] {
			f.SignaturePrefix = in.GetSignaturePrefix()
		}
		if fields["tolerance_seconds"] {
			f.ToleranceSeconds = in.GetToleranceSeconds()
		}
		if fields["rate_limit_per_second"] {
			f.RateLimitPerSecond = in.GetRateLimitPerSecond()
		}
		var change store.SecretChange
		if fields["verification"] && newScheme != cur.Verification {
			var err error
			if change, err = s.verificationChange(cur, newScheme, req.GetSecret()); err != nil {
				return f, change, err
			}
			f.Verification = newScheme
		} else if req.GetSecret() != "" {
			return f, change, invalid("secret", "is only accepted with a verification change; rotate secrets with AddEndpointSecret")
		}
		applyDefaults(&f)
		return f, change, checkEndpoint(f)
	})
	if err != nil {
		return nil, err
	}
	return &adminv1.UpdateEndpointResponse{Endpoint: endpointProto(e)}, nil
}

// verificationChange decides what happens to the stored secrets when an
// endpoint's scheme changes from cur.Verification to scheme; secret is the
// caller's (never generated here: UpdateEndpoint returns no secret).
func (s *Server) verificationChange(cur store.Endpoint, scheme, secret string) (store.SecretChange, error) {
	if scheme == schemeNone {
		if secret != "" {
			return store.SecretChange{}, invalid("secret", "must be empty when verification is VERIFICATION_SCHEME_NONE")
		}
		return store.SecretChange{DeleteAll: true}, nil
	}
	if secret == "" {
		// The stored secrets carry over only between schemes that seal them
		// (an HMAC key is an HMAC key) and not to a provider-issued one; a
		// digest of a bearer token or a password serves no other scheme.
		keep := cur.Verification != schemeNone && !hashedScheme(cur.Verification) && !hashedScheme(scheme) &&
			!providerIssued(scheme) && hasActive(cur.Secrets)
		if !keep {
			return store.SecretChange{}, invalid("secret", fmt.Sprintf(
				"is required when verification changes from %s to %s", schemeEnum(cur.Verification), schemeEnum(scheme)))
		}
		return store.SecretChange{}, nil
	}
	plain, err := s.secretFor(scheme, secret, "secret", false)
	if err != nil {
		return store.SecretChange{}, err
	}
	ns, err := s.seal(scheme, plain)
	if err != nil {
		return store.SecretChange{}, err
	}
	return store.SecretChange{DeleteAll: true, Add: &ns}, nil
}

// DeleteEndpoint deletes an endpoint of a human the caller may act for, its
// secrets and its WEBHOOK adapters.
func (s *Server) DeleteEndpoint(ctx context.Context, req *adminv1.DeleteEndpointRequest) (*adminv1.DeleteEndpointResponse, error) {
	_, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	id, err := parseID("id", req.GetId())
	if err != nil {
		return nil, err
	}
	if err := s.store.DeleteEndpoint(ctx, t, id); err != nil {
		return nil, err
	}
	return &adminv1.DeleteEndpointResponse{}, nil
}

// AddEndpointSecret adds a secret to an endpoint of a human the caller may
// act for, optionally giving its other secrets a grace period, and returns
// the new secret once.
func (s *Server) AddEndpointSecret(ctx context.Context, req *adminv1.AddEndpointSecretRequest) (*adminv1.AddEndpointSecretResponse, error) {
	_, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	id, err := parseID("endpoint_id", req.GetEndpointId())
	if err != nil {
		return nil, err
	}
	var validFor time.Duration
	if d := req.GetPreviousValidFor(); d != nil {
		if err := d.CheckValid(); err != nil {
			return nil, invalid("previous_valid_for", "is not a valid duration")
		}
		validFor = d.AsDuration()
		if validFor < 0 || validFor > maxPreviousValidFor {
			return nil, invalid("previous_valid_for", "must be between 0 and 7 days")
		}
	}
	if sec := req.GetSecret(); sec != "" {
		if n := utf8.RuneCountInString(sec); n < minSecretLen || n > maxSecretLen {
			return nil, invalid("secret", "must be 16–1024 characters")
		}
	}
	var plain string
	var newID uuid.UUID
	e, err := s.store.AddEndpointSecret(ctx, t, id, validFor, func(cur store.Endpoint) (store.NewSecret, error) {
		if cur.Verification == schemeNone {
			return store.NewSecret{}, apierr.FailedPrecondition("endpoint %s has verification NONE, which uses no secret", id)
		}
		active := 0
		for _, sec := range cur.Secrets {
			if sec.Active {
				active++
			}
		}
		if active >= maxActiveSecrets {
			return store.NewSecret{}, apierr.FailedPrecondition("endpoint %s already has %d unexpired secrets; remove one first", id, maxActiveSecrets)
		}
		var err error
		if plain, err = s.secretFor(cur.Verification, req.GetSecret(), "secret", true); err != nil {
			return store.NewSecret{}, err
		}
		ns, err := s.seal(cur.Verification, plain)
		newID = ns.ID
		return ns, err
	})
	if err != nil {
		return nil, err
	}
	return &adminv1.AddEndpointSecretResponse{Endpoint: endpointProto(e), Secret: plain, SecretId: newID.String()}, nil
}

// RemoveEndpointSecret deletes one secret of an endpoint of a human the
// caller may act for, unless it is the last unexpired one of a scheme that
// needs a secret.
func (s *Server) RemoveEndpointSecret(ctx context.Context, req *adminv1.RemoveEndpointSecretRequest) (*adminv1.RemoveEndpointSecretResponse, error) {
	_, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	id, err := parseID("endpoint_id", req.GetEndpointId())
	if err != nil {
		return nil, err
	}
	secretID, err := parseID("secret_id", req.GetSecretId())
	if err != nil {
		return nil, err
	}
	e, err := s.store.RemoveEndpointSecret(ctx, t, id, secretID, func(cur store.Endpoint) error {
		i := slices.IndexFunc(cur.Secrets, func(sec store.EndpointSecret) bool { return sec.ID == secretID })
		if i < 0 {
			return apierr.NotFound("secret %s not found", secretID)
		}
		if cur.Verification == schemeNone || !cur.Secrets[i].Active {
			return nil
		}
		for j, sec := range cur.Secrets {
			if j != i && sec.Active {
				return nil
			}
		}
		return apierr.FailedPrecondition("secret %s is the endpoint's last unexpired secret; add its replacement first", secretID)
	})
	if err != nil {
		return nil, err
	}
	return &adminv1.RemoveEndpointSecretResponse{Endpoint: endpointProto(e)}, nil
}

// secretFor validates a caller's secret for scheme or, when it is empty and
// generate is true, generates one where the scheme allows. The result is
// the plaintext to store and return; "" only for NONE.
func (s *Server) secretFor(scheme, given, field string, generate bool) (string, error) {
	if scheme == schemeNone {
		if given != "" {
			return "", invalid(field, "must be empty when verification is VERIFICATION_SCHEME_NONE")
		}
		return "", nil
	}
	if given == "" {
		if providerIssued(scheme) || !generate {
			return "", invalid(field, "is required for "+schemeEnum(scheme).String())
		}
		return generateSecret(scheme)
	}
	if n := utf8.RuneCountInString(given); n < minSecretLen || n > maxSecretLen {
		return "", invalid(field, "must be 16–1024 characters")
	}
	if !utf8.ValidString(given) {
		return "", invalid(field, "must be valid UTF-8")
	}
	switch scheme {
	case schemeStandard:
		switch {
		case strings.HasPrefix(given, "whsec_"):
			if key, err := strictBase64.DecodeString(given[len("whsec_"):]); err != nil || len(key) == 0 {
				return "", invalid(field, `a "whsec_" secret must be followed by standard base64`)
			}
		case strings.HasPrefix(given, "whpk_"):
			if key, err := strictBase64.DecodeString(given[len("whpk_"):]); err != nil || len(key) != 32 {
				return "", invalid(field, `a "whpk_" public key must be followed by the standard base64 of 32 bytes`)
			}
		}
	case schemeBearer:
		if strings.IndexFunc(given, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			return "", invalid(field, "a bearer token must not contain whitespace or control characters")
		}
	case schemeBasic:
		user, pass, ok := strings.Cut(given, ":")
		if !ok || user == "" || pass == "" {
			return "", invalid(field, `must be "user:password" with a non-empty user and password`)
		}
		if strings.IndexFunc(given, unicode.IsControl) >= 0 {
			return "", invalid(field, "must not contain control characters")
		}
	}
	return given, nil
}

// generateSecret returns a fresh random secret in the scheme's form.
func generateSecret(scheme string) (string, error) {
	b := make([]byte, generatedSecretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate secret: %w", err)
	}
	switch scheme {
	case schemeStandard:
		return "whsec_" + base64.StdEncoding.EncodeToString(b), nil
	case schemeBearer:
		return "sbw_" + base64.RawURLEncoding.EncodeToString(b), nil
	default: // hmac, github, shopify
		return hex.EncodeToString(b), nil
	}
}

// seal turns a secret into the row that stores it: sealed under the
// keyring's primary key with the row's own id as associated data (16 raw
// uuid bytes, the same as the ingest service opens it with), or a SHA-256
// digest for bearer and basic. The plaintext never reaches a log.
func (s *Server) seal(scheme, plain string) (store.NewSecret, error) {
	ns := store.NewSecret{ID: uuid.New(), Hint: hint(scheme, plain)}
	if hashedScheme(scheme) {
		sum := sha256.Sum256([]byte(plain))
		ns.Kind, ns.Hash = "hashed", sum[:]
		return ns, nil
	}
	if s.keys == nil {
		return store.NewSecret{}, errors.New("admin: no sealing keyring configured")
	}
	keyID, sealed, err := s.keys.Seal([]byte(plain), ns.ID[:])
	if err != nil {
		return store.NewSecret{}, fmt.Errorf("seal endpoint secret: %w", err)
	}
	ns.Kind, ns.KeyID, ns.Sealed = "sealed", &keyID, sealed
	return ns, nil
}

// hint is what tells secrets apart without revealing them: a known prefix
// and the last four characters ("whsec_…Q2xw"); for basic only the user.
func hint(scheme, plain string) string {
	if scheme == schemeBasic {
		user, _, _ := strings.Cut(plain, ":")
		if utf8.RuneCountInString(user) > 32 {
			user = string([]rune(user)[:32])
		}
		return user + ":…"
	}
	prefix := ""
	for _, p := range []string{"whsec_", "whpk_", "sbw_"} {
		if strings.HasPrefix(plain, p) {
			prefix = p
		}
	}
	r := []rune(plain)
	return prefix + "…" + string(r[len(r)-4:])
}

// newSlug returns 24 random URL-safe characters (144 bits).
func newSlug() (string, error) {
	b := make([]byte, slugLen*3/4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate slug: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// applyDefaults fills the columns whose zero value means "the default".
func applyDefaults(f *store.EndpointFields) {
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
func checkEndpoint(f store.EndpointFields) error {
	switch {
	case utf8.RuneCountInString(f.Name) > maxEndpointNameLen:
		return invalid("endpoint.name", "must be at most 200 characters")
	case !queuePattern(f.Queue):
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
	case f.Verification == schemeHMAC && f.SignatureHeader == nil:
		return invalid("endpoint.signature_header", "is required for VERIFICATION_SCHEME_HMAC_SHA256")
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
	return nil
}

// queuePattern is ^[a-z0-9][a-z0-9._-]{0,62}$ without a regexp.
func queuePattern(q string) bool {
	if q == "" || len(q) > 63 {
		return false
	}
	for i := 0; i < len(q); i++ {
		c := q[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || (c != '.' && c != '_' && c != '-')) {
			return false
		}
	}
	return true
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

func optionalString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func hasActive(secrets []store.EndpointSecret) bool {
	return slices.ContainsFunc(secrets, func(s store.EndpointSecret) bool { return s.Active })
}

// endpointProto renders an endpoint: its secrets described, never returned.
func endpointProto(e store.Endpoint) *adminv1.Endpoint {
	out := &adminv1.Endpoint{
		Id:                 e.ID.String(),
		HumanId:            e.HumanID.String(),
		Slug:               e.Slug,
		UrlPath:            "/hooks/" + e.Slug,
		Name:               e.Name,
		AgentId:            idString(e.AgentID),
		Queue:              e.Queue,
		Verification:       schemeEnum(e.Verification),
		HasSecret:          hasActive(e.Secrets),
		SignatureHeader:    derefString(e.SignatureHeader),
		DeliveryIdHeader:   derefString(e.DeliveryIDHeader),
		MaxBodyBytes:       e.MaxBodyBytes,
		Enabled:            ptr(e.Enabled),
		CreatedAt:          timestamp(&e.CreatedAt),
		UpdatedAt:          timestamp(&e.UpdatedAt),
		HmacAlgorithm:      e.HmacAlgorithm,
		HmacEncoding:       e.HmacEncoding,
		SignaturePrefix:    e.SignaturePrefix,
		ToleranceSeconds:   e.ToleranceSeconds,
		RateLimitPerSecond: e.RateLimitPerSecond,
		Secrets:            make([]*adminv1.EndpointSecret, len(e.Secrets)),
	}
	for i, sec := range e.Secrets {
		// Oldest first, so the last sealed one is the newest.
		if sec.KeyID != nil {
			out.SecretKeyId = *sec.KeyID
		}
		out.Secrets[i] = &adminv1.EndpointSecret{
			Id:        sec.ID.String(),
			Hint:      sec.Hint,
			KeyId:     derefString(sec.KeyID),
			CreatedAt: timestamp(&sec.CreatedAt),
			ExpiresAt: timestamp(sec.ExpiresAt),
		}
	}
	return out
}
