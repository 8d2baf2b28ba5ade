package sources

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/switchboard/switchboard/services/ingest/verify"
)

// Meta's verify token, as the contract bounds it.
const (
	minVerifyTokenLen = 8
	maxVerifyTokenLen = 256
	metaFieldPath     = "endpoint.meta_verify_token"
)

// VerifyTokenDigest checks a Meta verify token (the one the owner gives
// Meta for its subscription handshake) and returns what is stored of it:
// its SHA-256, since it is only ever compared (EndpointFields.VerifyTokenSHA256).
func VerifyTokenDigest(token string) ([]byte, error) {
	if n := utf8.RuneCountInString(token); n < minVerifyTokenLen || n > maxVerifyTokenLen {
		return nil, invalid(metaFieldPath, "must be 8–256 characters")
	}
	if !utf8.ValidString(token) || strings.IndexFunc(token, unicode.IsControl) >= 0 {
		return nil, invalid(metaFieldPath, "must be UTF-8 text without control characters")
	}
	sum := sha256.Sum256([]byte(token))
	return sum[:], nil
}

// HasVerifyToken reports whether a Meta verify token is stored.
func (e Endpoint) HasVerifyToken() bool { return len(e.VerifyTokenSHA256) > 0 }

// settleVerifyToken drops the verify token of an endpoint an update takes
// away from meta (it verifies nothing else), refusing one the same update
// gave: only meta takes it.
func settleVerifyToken(cur EndpointFields, f *EndpointFields) error {
	if f.Verification == verify.SchemeMeta {
		return nil
	}
	if len(f.VerifyTokenSHA256) > 0 && !bytes.Equal(f.VerifyTokenSHA256, cur.VerifyTokenSHA256) {
		return errVerifyTokenNotMeta
	}
	f.VerifyTokenSHA256 = nil
	return nil
}

var errVerifyTokenNotMeta = invalid(metaFieldPath, "is only accepted with VERIFICATION_SCHEME_META")

// checkVerifyToken: a meta endpoint has a verify token, no other has one.
func checkVerifyToken(f EndpointFields) error {
	switch {
	case f.Verification == verify.SchemeMeta && len(f.VerifyTokenSHA256) != sha256.Size:
		return invalid(metaFieldPath, "is required for VERIFICATION_SCHEME_META")
	case f.Verification != verify.SchemeMeta && len(f.VerifyTokenSHA256) > 0:
		return errVerifyTokenNotMeta
	}
	return nil
}
