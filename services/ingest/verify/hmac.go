package verify

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strings"
)

// genericVerifier checks an HMAC of the body carried in a configurable header,
// for providers without a dedicated scheme.
type genericVerifier struct {
	secrets [][]byte
	header  string
	newHash func() hash.Hash
	size    int
	decode  func(string) ([]byte, error)
	prefix  string
}

func newGenericVerifier(cfg Config) (Verifier, error) {
	secrets, err := copySecrets(SchemeHMAC, cfg.Secrets)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(cfg.Header) == "" {
		return nil, errors.New("verify: scheme \"hmac\" needs a header name")
	}
	v := genericVerifier{secrets: secrets, header: http.CanonicalHeaderKey(cfg.Header), prefix: cfg.Prefix}
	switch cfg.Algorithm {
	case "sha256":
		v.newHash, v.size = sha256.New, sha256.Size
	case "sha512":
		v.newHash, v.size = sha512.New, sha512.Size
	default:
		return nil, fmt.Errorf("verify: scheme \"hmac\": unsupported algorithm %q", cfg.Algorithm)
	}
	switch cfg.Encoding {
	case "hex":
		v.decode = hex.DecodeString
	case "base64":
		v.decode = strictBase64.DecodeString
	default:
		return nil, fmt.Errorf("verify: scheme \"hmac\": unsupported encoding %q", cfg.Encoding)
	}
	return v, nil
}

func (v genericVerifier) Verify(r Request) (Result, error) {
	header, err := singleHeader(r.Header, v.header)
	if err != nil {
		return Result{}, err
	}
	encoded, ok := strings.CutPrefix(header, v.prefix)
	if !ok {
		return Result{}, unverified("hmac: signature lacks the configured prefix")
	}
	sig, err := v.decode(encoded)
	if err != nil || len(sig) != v.size {
		return Result{}, unverified("hmac: malformed signature")
	}
	if !anyMACMatches(v.newHash, v.secrets, sig, r.Body) {
		return Result{}, unverified("hmac: signature mismatch")
	}
	return Result{Scheme: SchemeHMAC}, nil
}
