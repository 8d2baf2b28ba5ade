package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash"
	"net/http"
	"net/url"
	"time"
	"unicode/utf8"
)

// Handshaker is implemented by the verifiers of providers that check a URL
// before (and while) delivering to it. The ingest edge asks it first, for
// every request to such an endpoint, and writes the answer instead of
// storing anything.
type Handshaker interface {
	Verifier
	// Handshake reports whether r is a handshake of the scheme and, if so,
	// the answer: the provider's expected reply, or a refusal the provider
	// documents (Meta's 403 for a wrong verify token). Not a handshake
	// (false): r is an ordinary delivery, for Verify. An error (wrapping
	// ErrUnverified) is a handshake the provider signs whose signature
	// failed: the edge answers 401, never the challenge.
	Handshake(r Request) (Answer, bool, error)
}

// Answer is the reply to a handshake.
type Answer struct {
	Status      int
	ContentType string
	Body        []byte
}

// maxHandshakeToken bounds a challenge or token echoed back (or MACed): the
// providers' are tens of characters; the edge answers 400 beyond.
const maxHandshakeToken = 1024

// echoable reports whether a provider's token may be echoed: present,
// bounded, and text (it is written back as text/plain or in JSON).
func echoable(token string) bool {
	return token != "" && len(token) <= maxHandshakeToken && utf8.ValidString(token)
}

func textAnswer(s string) Answer {
	return Answer{Status: http.StatusOK, ContentType: "text/plain; charset=utf-8", Body: []byte(s)}
}

func jsonAnswer(v any) Answer {
	b, _ := json.Marshal(v) // maps and structs of strings: cannot fail
	return Answer{Status: http.StatusOK, ContentType: "application/json", Body: append(b, '\n')}
}

// refusal is a handshake answered with status and the edge's error shape.
func refusal(status int, msg string) Answer {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	return Answer{Status: status, ContentType: "application/json", Body: append(b, '\n')}
}

// badToken answers a handshake whose token cannot be echoed.
func badToken(name string) Answer {
	return refusal(http.StatusBadRequest, fmt.Sprintf("%s must be 1-%d bytes of UTF-8", name, maxHandshakeToken))
}

// singleQuery returns the one value of name in q; ok is false when it is
// absent or repeated (which value a provider meant would be a guess).
func singleQuery(q url.Values, name string) (string, bool) {
	v := q[name]
	if len(v) != 1 {
		return "", false
	}
	return v[0], true
}

// isGet reports whether r came as a GET (Meta's and X's handshakes).
func isGet(r Request) bool { return r.Method == http.MethodGet || r.Method == http.MethodHead }

// matchingSecret returns the secret whose MAC over parts is got, comparing
// against every secret without stopping early (as anyMACMatches does); nil
// when none matches. A handshake answer is computed with the secret that
// signed the request, which during a rotation is the one the provider holds.
func matchingSecret(newHash func() hash.Hash, secrets [][]byte, got []byte, parts ...[]byte) []byte {
	var match []byte
	for _, s := range secrets {
		if hmac.Equal(got, computeMAC(newHash, s, parts...)) {
			match = s
		}
	}
	return match
}

// hmacSHA256 is the MAC the handshakes answer with.
func hmacSHA256(key []byte, msg string) []byte { return computeMAC(sha256.New, key, []byte(msg)) }

// newHandshakeVerifier builds the verifiers of the schemes that have a
// handshake and no configuration beyond their secrets (and Meta's verify
// token).
func newHandshakeVerifier(cfg Config, tolerance time.Duration) (Verifier, error) {
	secrets, err := copySecrets(cfg.Scheme, cfg.Secrets)
	if err != nil {
		return nil, err
	}
	switch cfg.Scheme {
	case SchemeZoom:
		return zoomVerifier{secrets: secrets, tolerance: tolerance}, nil
	case SchemeMeta:
		if len(cfg.VerifyTokenHash) != sha256.Size {
			return nil, fmt.Errorf("verify: scheme %q needs the SHA-256 of its verify token", cfg.Scheme)
		}
		return metaVerifier{secrets: secrets, tokenHash: append([]byte(nil), cfg.VerifyTokenHash...)}, nil
	case SchemeX:
		return xVerifier{secrets: secrets}, nil
	default:
		return msgraphVerifier{secrets: secrets}, nil
	}
}
