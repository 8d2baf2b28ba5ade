package verify

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"
)

const (
	standardSecretPrefix    = "whsec_"
	standardPublicKeyPrefix = "whpk_"
)

// standardVerifier implements the Standard Webhooks spec (and Svix, its
// reference implementation, which uses the same scheme under svix-* names).
type standardVerifier struct {
	hmacKeys  [][]byte
	publicKey []ed25519.PublicKey
	tolerance time.Duration
}

func newStandardVerifier(secrets [][]byte, tolerance time.Duration) (Verifier, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("verify: scheme %q needs at least one secret", SchemeStandardWebhooks)
	}
	v := standardVerifier{tolerance: tolerance}
	for i, s := range secrets {
		if err := v.addSecret(s); err != nil {
			return nil, fmt.Errorf("verify: scheme %q: secret %d: %w", SchemeStandardWebhooks, i, err)
		}
	}
	return v, nil
}

// addSecret sorts one configured secret into HMAC keys and ed25519 public
// keys. Every form has exactly one reading, so a secret verifies under one
// key: "whsec_<base64>" and, as the reference libraries read a secret whose
// prefix was stripped, bare base64 are HMAC keys (never the text itself);
// "whpk_<base64>" is a public key. Anything else, raw 32-byte keys included,
// is refused.
func (v *standardVerifier) addSecret(s []byte) error {
	encoded, hasPrefix := bytes.CutPrefix(s, []byte(standardSecretPrefix))
	switch {
	case len(s) == 0:
		return fmt.Errorf("empty secret")
	case bytes.HasPrefix(s, []byte(standardPublicKeyPrefix)):
		key, err := strictBase64.DecodeString(string(s[len(standardPublicKeyPrefix):]))
		if err != nil || len(key) != ed25519.PublicKeySize {
			return fmt.Errorf("%s public key must be base64 of %d bytes", standardPublicKeyPrefix, ed25519.PublicKeySize)
		}
		if smallOrderKey(key) {
			return fmt.Errorf("%s public key is a small-order point", standardPublicKeyPrefix)
		}
		v.publicKey = append(v.publicKey, ed25519.PublicKey(key))
	default:
		key, err := strictBase64.DecodeString(string(encoded))
		if err != nil || len(key) == 0 {
			if hasPrefix {
				return fmt.Errorf("%s secret is not valid base64", standardSecretPrefix)
			}
			return fmt.Errorf("secret is neither %s<base64>, %s<base64> nor base64", standardSecretPrefix, standardPublicKeyPrefix)
		}
		v.hmacKeys = append(v.hmacKeys, key)
	}
	return nil
}

// smallOrderKey reports whether pk encodes a point of order dividing 8. Such a
// key is forgeable: with R = identity and S = 0, verification reduces to
// [k]pk == identity, which holds for one message hash in eight or more. The
// probe uses that very forgery on fixed messages, so it needs no curve
// arithmetic beyond the standard library; a false negative has probability
// (7/8)^smallOrderProbes, and a genuine key can never pass.
func smallOrderKey(pk []byte) bool {
	sig := make([]byte, ed25519.SignatureSize)
	sig[0] = 1 // R = the identity point's encoding; S stays 0.
	for i := range smallOrderProbes {
		if ed25519.Verify(ed25519.PublicKey(pk), []byte{byte(i)}, sig) {
			return true
		}
	}
	return false
}

const smallOrderProbes = 200

// standardHeaders picks one header family as a whole; mixing a webhook-id with
// an svix-signature would verify a message nobody signed as such.
func standardHeaders(h http.Header) (id, ts, sig string, err error) {
	prefix := "webhook-"
	if len(h.Values("webhook-id")) == 0 && len(h.Values("webhook-timestamp")) == 0 &&
		len(h.Values("webhook-signature")) == 0 {
		prefix = "svix-"
	}
	if id, err = singleHeader(h, prefix+"id"); err != nil {
		return "", "", "", err
	}
	if ts, err = singleHeader(h, prefix+"timestamp"); err != nil {
		return "", "", "", err
	}
	if sig, err = singleHeader(h, prefix+"signature"); err != nil {
		return "", "", "", err
	}
	return id, ts, sig, nil
}

// standardSignature is one "version,base64" entry of the signature header.
type standardSignature struct {
	version string
	sig     []byte
}

// parseStandardSignatures splits the space-delimited signature list. Entries
// with an unknown version or an undecodable value are skipped, as the spec
// requires, so a sender can add new versions without breaking receivers.
func parseStandardSignatures(header string) ([]standardSignature, error) {
	var out []standardSignature
	seen := 0
	for entry := range strings.SplitSeq(header, " ") {
		if entry == "" {
			continue
		}
		seen++
		if seen > maxSignatures {
			return nil, unverified("too many signatures")
		}
		version, encoded, ok := strings.Cut(entry, ",")
		if !ok {
			continue
		}
		var want int
		switch version {
		case "v1":
			want = sha256.Size
		case "v1a":
			want = ed25519.SignatureSize
		default:
			continue
		}
		sig, err := strictBase64.DecodeString(encoded)
		if err != nil || len(sig) != want {
			continue
		}
		out = append(out, standardSignature{version: version, sig: sig})
	}
	return out, nil
}

func (v standardVerifier) Verify(r Request) (Result, error) {
	id, rawTS, sigHeader, err := standardHeaders(r.Header)
	if err != nil {
		return Result{}, err
	}
	ts, err := signedTimestamp(rawTS, r.Now, v.tolerance)
	if err != nil {
		return Result{}, err
	}
	sigs, err := parseStandardSignatures(sigHeader)
	if err != nil {
		return Result{}, err
	}
	signed := make([]byte, 0, len(id)+len(rawTS)+len(r.Body)+2)
	signed = append(signed, id...)
	signed = append(signed, '.')
	signed = append(signed, rawTS...)
	signed = append(signed, '.')
	signed = append(signed, r.Body...)

	// Each key's MAC is computed once, however many v1 entries the header has.
	macs := make([][]byte, 0, len(v.hmacKeys))
	for _, key := range v.hmacKeys {
		macs = append(macs, computeMAC(sha256.New, key, signed))
	}
	matched := false
	for _, s := range sigs {
		switch s.version {
		case "v1":
			for _, want := range macs {
				if hmac.Equal(s.sig, want) {
					matched = true
				}
			}
		case "v1a":
			for _, pk := range v.publicKey {
				if ed25519.Verify(pk, signed, s.sig) {
					matched = true
				}
			}
		}
	}
	if !matched {
		return Result{}, unverified("standard_webhooks: no matching signature")
	}
	return Result{Scheme: SchemeStandardWebhooks, DeliveryID: id, DeliveryIDSigned: true, Timestamp: ts}, nil
}
