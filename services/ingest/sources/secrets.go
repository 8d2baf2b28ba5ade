package sources

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
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/services/ingest/sources/internal/dbsqlc"
	"github.com/switchboard/switchboard/services/ingest/verify"
)

// generatedSecretBytes is the entropy of a secret this package generates.
const generatedSecretBytes = 32

var (
	strictBase64 = base64.StdEncoding.Strict()

	errSecretWithoutVerification = invalid("secret", "is only accepted with a verification change; rotate secrets with AddEndpointSecret")
)

// newSecret is one endpoint secret to store: sealed (keyID and sealed set,
// bound to id) or hashed (hash set).
type newSecret struct {
	id     uuid.UUID
	kind   string
	keyID  *string
	sealed []byte
	hash   []byte
	hint   string
}

// secretChange is what an update does to the stored secrets.
type secretChange struct {
	// deleteAll removes every stored secret (before add, if any).
	deleteAll bool
	add       *newSecret
}

// SecretAAD is the associated data a secret is sealed with: its row id, so
// a ciphertext copied to another row does not open.
func SecretAAD(secretID uuid.UUID) []byte { return secretID[:] }

// AddEndpointSecret adds a secret (secret when given, else a generated one
// where the scheme allows) to an endpoint of a human t may act for and, when
// previousValidFor is positive, makes its other unexpired secrets expire that
// long from now (never later than they already would): the rotation a
// sender needs to switch over. It returns the endpoint, the new secret's
// plaintext (shown once) and its id.
func (s *Store) AddEndpointSecret(ctx context.Context, t auth.Tenant, id uuid.UUID, secret string, previousValidFor time.Duration) (Endpoint, string, uuid.UUID, error) {
	if previousValidFor < 0 || previousValidFor > maxPreviousValidFor {
		return Endpoint{}, "", uuid.Nil, invalid("previous_valid_for", "must be between 0 and 7 days")
	}
	if n := utf8.RuneCountInString(secret); secret != "" && (n < minSecretLen || n > maxSecretLen) {
		return Endpoint{}, "", uuid.Nil, invalid("secret", "must be 16–1024 characters")
	}
	var plain string
	var ns newSecret
	var out Endpoint
	err := s.withLockedEndpoint(ctx, t, id, func(tx pgx.Tx, cur Endpoint) error {
		if cur.Verification == verify.SchemeNone {
			return apierr.FailedPrecondition("endpoint %s has verification NONE, which uses no secret", id)
		}
		active := 0
		for _, sec := range cur.Secrets {
			if sec.Active {
				active++
			}
		}
		if active >= maxActiveSecrets {
			return apierr.FailedPrecondition("endpoint %s already has %d unexpired secrets; remove one first", id, maxActiveSecrets)
		}
		var err error
		if plain, err = secretFor(cur.Verification, secret, true); err != nil {
			return err
		}
		if ns, err = s.seal(cur.Verification, plain); err != nil {
			return err
		}
		if err := s.insertSecret(ctx, tx, id, ns); err != nil {
			return err
		}
		if previousValidFor > 0 {
			if err := s.q.EndpointSecretExpireOthers(ctx, tx, dbsqlc.EndpointSecretExpireOthersParams{
				ValidForMicros: previousValidFor.Microseconds(), EndpointID: id, KeepID: ns.id,
			}); err != nil {
				return fmt.Errorf("expire endpoint secrets: %w", err)
			}
		}
		out, err = s.touched(ctx, tx, t, id)
		return err
	})
	if err != nil {
		return Endpoint{}, "", uuid.Nil, err
	}
	return out, plain, ns.id, nil
}

// RemoveEndpointSecret deletes one secret of an endpoint of a human t may
// act for, unless it is the last unexpired one of a scheme that needs a
// secret. NOT_FOUND when the secret is not one of the endpoint's.
func (s *Store) RemoveEndpointSecret(ctx context.Context, t auth.Tenant, id, secretID uuid.UUID) (Endpoint, error) {
	var out Endpoint
	err := s.withLockedEndpoint(ctx, t, id, func(tx pgx.Tx, cur Endpoint) error {
		i := slices.IndexFunc(cur.Secrets, func(sec EndpointSecret) bool { return sec.ID == secretID })
		if i < 0 {
			return apierr.NotFound("secret %s not found", secretID)
		}
		last := cur.Verification != verify.SchemeNone && cur.Secrets[i].Active &&
			!slices.ContainsFunc(cur.Secrets, func(sec EndpointSecret) bool { return sec.ID != secretID && sec.Active })
		if last {
			return apierr.FailedPrecondition("secret %s is the endpoint's last unexpired secret; add its replacement first", secretID)
		}
		n, err := s.q.EndpointSecretDelete(ctx, tx, dbsqlc.EndpointSecretDeleteParams{ID: secretID, EndpointID: id})
		if err := apierr.Affected(n, err, "delete endpoint secret", "secret "+secretID.String(), constraints); err != nil {
			return err
		}
		out, err = s.touched(ctx, tx, t, id)
		return err
	})
	return out, err
}

// verificationChange decides what happens to the stored secrets when an
// endpoint's scheme changes from cur.Verification to scheme; secret is the
// caller's (never generated here).
func (s *Store) verificationChange(cur Endpoint, scheme verify.Scheme, secret string) (secretChange, error) {
	if scheme == verify.SchemeNone {
		if secret != "" {
			return secretChange{}, invalid("secret", "must be empty when verification is VERIFICATION_SCHEME_NONE")
		}
		return secretChange{deleteAll: true}, nil
	}
	if secret == "" {
		// The stored secrets carry over only between schemes that seal them
		// as raw keys (an HMAC key is an HMAC key) and not to a
		// provider-issued one; a digest of a bearer token or a password
		// serves no other scheme, and a Standard Webhooks secret is base64
		// or a public key, never the raw key another scheme reads.
		keep := cur.Verification != verify.SchemeNone && !hashedScheme(cur.Verification) && !hashedScheme(scheme) &&
			!providerIssued(scheme) && cur.HasSecret() &&
			cur.Verification != verify.SchemeStandardWebhooks && scheme != verify.SchemeStandardWebhooks
		if !keep {
			return secretChange{}, invalid("secret", fmt.Sprintf(
				"is required when verification changes from %s to %s", SchemeEnum(cur.Verification), SchemeEnum(scheme)))
		}
		return secretChange{}, nil
	}
	plain, err := secretFor(scheme, secret, false)
	if err != nil {
		return secretChange{}, err
	}
	ns, err := s.seal(scheme, plain)
	if err != nil {
		return secretChange{}, err
	}
	return secretChange{deleteAll: true, add: &ns}, nil
}

func (s *Store) applySecretChange(ctx context.Context, tx pgx.Tx, id uuid.UUID, c secretChange) error {
	if c.deleteAll {
		if err := s.q.EndpointSecretDeleteAll(ctx, tx, id); err != nil {
			return fmt.Errorf("delete endpoint secrets: %w", err)
		}
	}
	if c.add != nil {
		return s.insertSecret(ctx, tx, id, *c.add)
	}
	return nil
}

// secretFor validates a caller's secret for scheme or, when it is empty and
// generate is true, generates one where the scheme allows. The result is
// the plaintext to store and return; "" only for NONE.
func secretFor(scheme verify.Scheme, given string, generate bool) (string, error) {
	const field = "secret"
	if scheme == verify.SchemeNone {
		if given != "" {
			return "", invalid(field, "must be empty when verification is VERIFICATION_SCHEME_NONE")
		}
		return "", nil
	}
	if given == "" {
		if providerIssued(scheme) || !generate {
			return "", invalid(field, "is required for "+SchemeEnum(scheme).String())
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
	case verify.SchemeStandardWebhooks:
		if err := standardSecret(given); err != nil {
			return "", err
		}
	case verify.SchemeBearer:
		if strings.IndexFunc(given, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			return "", invalid(field, "a bearer token must not contain whitespace or control characters")
		}
	case verify.SchemeMSGraph:
		if utf8.RuneCountInString(given) > maxClientStateLen {
			return "", invalid(field, "must be at most 128 characters for VERIFICATION_SCHEME_MS_GRAPH (Graph's limit on a clientState)")
		}
	case verify.SchemeBasic:
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

// standardSecret checks a Standard Webhooks secret has one of the forms the
// verifier reads, each as exactly one key: "whsec_<base64>", the same base64
// without the prefix (as the reference libraries read a secret whose prefix
// was stripped), or an ed25519 public key "whpk_<base64 of 32 bytes>".
func standardSecret(given string) error {
	const field = "secret"
	switch {
	case strings.HasPrefix(given, "whsec_"):
		if key, err := strictBase64.DecodeString(given[len("whsec_"):]); err != nil || len(key) == 0 {
			return invalid(field, `a "whsec_" secret must be followed by standard base64`)
		}
	case strings.HasPrefix(given, "whpk_"):
		if key, err := strictBase64.DecodeString(given[len("whpk_"):]); err != nil || len(key) != 32 {
			return invalid(field, `a "whpk_" public key must be followed by the standard base64 of 32 bytes`)
		}
	case strings.HasPrefix(given, "whsk_"):
		return invalid(field, `is the sender's "whsk_" signing key: configure its "whpk_" public key, and keep the signing key secret`)
	default:
		if key, err := strictBase64.DecodeString(given); err != nil || len(key) == 0 {
			return invalid(field, `must be "whsec_<base64>", "whpk_<base64>" or standard base64 (read as the key's base64, never as text)`)
		}
	}
	return nil
}

// generateSecret returns a fresh random secret in the scheme's form.
func generateSecret(scheme verify.Scheme) (string, error) {
	b := make([]byte, generatedSecretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate secret: %w", err)
	}
	switch scheme {
	case verify.SchemeStandardWebhooks:
		return "whsec_" + base64.StdEncoding.EncodeToString(b), nil
	case verify.SchemeBearer:
		return "sbw_" + base64.RawURLEncoding.EncodeToString(b), nil
	default: // hmac, github, shopify, msgraph
		return hex.EncodeToString(b), nil
	}
}

// seal turns a secret into the row that stores it: sealed under the
// keyring's primary key with SecretAAD of the row's own id, or a SHA-256
// digest for bearer and basic. The plaintext never reaches a log.
func (s *Store) seal(scheme verify.Scheme, plain string) (newSecret, error) {
	ns := newSecret{id: uuid.New(), hint: hint(scheme, plain)}
	if hashedScheme(scheme) {
		sum := sha256.Sum256([]byte(plain))
		ns.kind, ns.hash = "hashed", sum[:]
		return ns, nil
	}
	if s.keys == nil {
		return newSecret{}, errors.New("sources: no sealing keyring configured")
	}
	keyID, sealed, err := s.keys.Seal([]byte(plain), SecretAAD(ns.id))
	if err != nil {
		return newSecret{}, fmt.Errorf("seal endpoint secret: %w", err)
	}
	ns.kind, ns.keyID, ns.sealed = "sealed", &keyID, sealed
	return ns, nil
}

// hint is what tells secrets apart without revealing them: a known prefix
// and the last four characters ("whsec_…Q2xw"); for basic only the user.
func hint(scheme verify.Scheme, plain string) string {
	if scheme == verify.SchemeBasic {
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
