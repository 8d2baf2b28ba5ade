package verify

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
)

// credentialVerifier checks bearer tokens and basic credentials against
// SHA-256 digests, so the configuration never holds them in clear. A plain
// (unsalted) hash is adequate here because the credentials are high-entropy
// machine secrets, not user-chosen passwords.
type credentialVerifier struct {
	scheme Scheme
	hashes [][]byte
}

func newCredentialVerifier(cfg Config) (Verifier, error) {
	if len(cfg.Secrets) > 0 {
		return nil, fmt.Errorf("verify: scheme %q takes SecretHashes, never clear-text Secrets", cfg.Scheme)
	}
	if len(cfg.SecretHashes) == 0 {
		return nil, fmt.Errorf("verify: scheme %q needs at least one secret hash", cfg.Scheme)
	}
	hashes := make([][]byte, 0, len(cfg.SecretHashes))
	for i, h := range cfg.SecretHashes {
		if len(h) != sha256.Size {
			return nil, fmt.Errorf("verify: scheme %q: secret hash %d is not a SHA-256 digest", cfg.Scheme, i)
		}
		hashes = append(hashes, append([]byte(nil), h...))
	}
	return credentialVerifier{scheme: cfg.Scheme, hashes: hashes}, nil
}

func (v credentialVerifier) Verify(r Request) (Result, error) {
	header, err := singleHeader(r.Header, "Authorization")
	if err != nil {
		return Result{}, err
	}
	authScheme, value, ok := strings.Cut(header, " ")
	if !ok || value == "" || strings.ContainsAny(value, " \t") {
		return Result{}, unverified(string(v.scheme) + ": malformed Authorization header")
	}
	var credential []byte
	switch v.scheme {
	case SchemeBearer:
		// The auth-scheme token is case-insensitive (RFC 9110 §11.1).
		if !strings.EqualFold(authScheme, "Bearer") {
			return Result{}, unverified("bearer: wrong Authorization scheme")
		}
		credential = []byte(value)
	default:
		if !strings.EqualFold(authScheme, "Basic") {
			return Result{}, unverified("basic: wrong Authorization scheme")
		}
		decoded, err := base64.StdEncoding.DecodeString(value)
		if err != nil || !strings.Contains(string(decoded), ":") {
			return Result{}, unverified("basic: malformed credentials")
		}
		credential = decoded
	}
	sum := sha256.Sum256(credential)
	matched := 0
	for _, h := range v.hashes {
		matched |= subtle.ConstantTimeCompare(sum[:], h)
	}
	if matched != 1 {
		return Result{}, unverified(string(v.scheme) + ": credential mismatch")
	}
	return Result{Scheme: v.scheme}, nil
}
