package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxSignatures caps how many candidate signatures one header may carry, so a
// huge header cannot multiply the MAC/ed25519 work done per request.
const maxSignatures = 20

// strictBase64 gives a signature or key exactly one accepted spelling: it
// rejects non-canonical encodings (non-zero padding bits, via Strict) and CR
// or LF anywhere, which encoding/base64 otherwise skips even in Strict mode
// (FuzzStandardWebhooks found "…/t\rmIK…" accepted as the signature it
// decodes to).
var strictBase64 canonicalBase64

type canonicalBase64 struct{}

func (canonicalBase64) DecodeString(s string) ([]byte, error) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, errors.New("base64: line breaks are not allowed")
	}
	return base64.StdEncoding.Strict().DecodeString(s)
}

// unverifiedError carries a reason for logs and the endpoint's delivery
// log; it must never be built from a secret, an expected signature or the
// request's own bytes. stale marks a signed timestamp outside the
// tolerance (ErrTimestamp).
type unverifiedError struct {
	reason string
	stale  bool
}

func (e *unverifiedError) Error() string { return ErrUnverified.Error() + ": " + e.reason }

func (e *unverifiedError) Unwrap() error { return ErrUnverified }

// Is makes a stale timestamp's error match ErrTimestamp too.
func (e *unverifiedError) Is(target error) bool { return e.stale && target == ErrTimestamp }

func unverified(reason string) error { return &unverifiedError{reason: reason} }

// Reason is the short reason a verification failed ("signature mismatch",
// "timestamp too old", "missing header Stripe-Signature"), safe to show the
// endpoint's owner: the verifiers build it from fixed words and header
// names only. "" when err is not a verification failure.
func Reason(err error) string {
	var u *unverifiedError
	if errors.As(err, &u) {
		return u.reason
	}
	return ""
}

// singleHeader returns the one value of name. A repeated header is rejected
// rather than resolved, because picking one of several values is exactly the
// ambiguity a forger would exploit if a proxy and this code disagreed.
func singleHeader(h http.Header, name string) (string, error) {
	values := h.Values(name)
	switch {
	case len(values) == 0 || values[0] == "":
		return "", unverified("missing header " + name)
	case len(values) > 1:
		return "", unverified("repeated header " + name)
	}
	return values[0], nil
}

// parseUnix accepts only plain decimal seconds: signs, spaces and exponents
// would let two different signed strings denote the same instant.
func parseUnix(s string) (time.Time, error) {
	if s == "" || len(s) > 15 {
		return time.Time{}, errors.New("bad timestamp")
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return time.Time{}, errors.New("bad timestamp")
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, errors.New("bad timestamp")
	}
	return time.Unix(n, 0), nil
}

// signedTimestamp parses raw and rejects it when it is too old (replay) or too
// far in the future (a pre-signed request that would stay valid for longer
// than the tolerance).
func signedTimestamp(raw string, now time.Time, tolerance time.Duration) (time.Time, error) {
	ts, err := parseUnix(raw)
	if err != nil {
		return time.Time{}, unverified(err.Error())
	}
	if now.IsZero() {
		now = time.Now()
	}
	if now.Sub(ts) > tolerance {
		return time.Time{}, &unverifiedError{reason: "timestamp too old", stale: true}
	}
	if ts.Sub(now) > tolerance {
		return time.Time{}, &unverifiedError{reason: "timestamp too far in the future", stale: true}
	}
	return ts, nil
}

func computeMAC(newHash func() hash.Hash, key []byte, parts ...[]byte) []byte {
	m := hmac.New(newHash, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// anyMACMatches compares got against the MAC under every secret without
// stopping early, so timing reveals neither the match nor which secret hit.
func anyMACMatches(newHash func() hash.Hash, secrets [][]byte, got []byte, parts ...[]byte) bool {
	matched := false
	for _, s := range secrets {
		if hmac.Equal(got, computeMAC(newHash, s, parts...)) {
			matched = true
		}
	}
	return matched
}

func anySHA256Matches(secrets [][]byte, got []byte, parts ...[]byte) bool {
	return anyMACMatches(sha256.New, secrets, got, parts...)
}

// copySecrets validates and defensively copies raw secrets so later mutation
// of the caller's slices cannot change what a live verifier accepts.
func copySecrets(scheme Scheme, secrets [][]byte) ([][]byte, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("verify: scheme %q needs at least one secret", scheme)
	}
	out := make([][]byte, 0, len(secrets))
	for i, s := range secrets {
		if len(s) == 0 {
			return nil, fmt.Errorf("verify: scheme %q: secret %d is empty", scheme, i)
		}
		out = append(out, append([]byte(nil), s...))
	}
	return out, nil
}

// hexSHA256 decodes a "<prefix><hex>" header carrying a SHA-256 MAC, as
// GitHub and Slack send them; wrongPrefix says what a missing prefix means.
func hexSHA256(provider, header, prefix, wrongPrefix string) ([]byte, error) {
	encoded, ok := strings.CutPrefix(header, prefix)
	if !ok {
		return nil, unverified(provider + ": " + wrongPrefix)
	}
	sig, err := hex.DecodeString(encoded)
	if err != nil || len(sig) != sha256.Size {
		return nil, unverified(provider + ": malformed signature")
	}
	return sig, nil
}

// sha256Matches is anySHA256Matches as the verifiers answer it: nil, or
// the provider's mismatch.
func sha256Matches(provider string, secrets [][]byte, sig []byte, parts ...[]byte) error {
	if !anySHA256Matches(secrets, sig, parts...) {
		return unverified(provider + ": signature mismatch")
	}
	return nil
}
