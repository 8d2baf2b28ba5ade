package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"net/http"
)

// metaVerifier checks Meta's (Facebook, Instagram, WhatsApp) webhooks:
// X-Hub-Signature-256 is "sha256=" + hex HMAC-SHA256(app secret, body). Meta
// signs no delivery id.
type metaVerifier struct {
	secrets [][]byte
	// tokenHash is the SHA-256 of the verify token the owner gave Meta.
	tokenHash []byte
}

func (v metaVerifier) Verify(r Request) (Result, error) {
	header, err := singleHeader(r.Header, "X-Hub-Signature-256")
	if err != nil {
		return Result{}, err
	}
	sig, err := hexSHA256("meta", header, "sha256=", "signature lacks sha256= prefix")
	if err != nil {
		return Result{}, err
	}
	if err := sha256Matches("meta", v.secrets, sig, r.Body); err != nil {
		return Result{}, err
	}
	return Result{Scheme: SchemeMeta}, nil
}

// Handshake answers Meta's verification request, GET
// ?hub.mode=subscribe&hub.verify_token=T&hub.challenge=C: 200 text/plain C
// when T is the endpoint's verify token, else 403. Meta does not sign it; the
// verify token is what proves the subscriber is the endpoint's owner. The
// tokens are compared as SHA-256 digests, in constant time.
func (v metaVerifier) Handshake(r Request) (Answer, bool, error) {
	if !isGet(r) || !r.Query.Has("hub.mode") {
		return Answer{}, false, nil
	}
	mode, okMode := singleQuery(r.Query, "hub.mode")
	token, okToken := singleQuery(r.Query, "hub.verify_token")
	sum := sha256.Sum256([]byte(token))
	if !hmac.Equal(sum[:], v.tokenHash) || !okToken || !okMode || mode != "subscribe" {
		return refusal(http.StatusForbidden, "forbidden"), true, nil
	}
	challenge, ok := singleQuery(r.Query, "hub.challenge")
	if !ok || !echoable(challenge) {
		return badToken("hub.challenge"), true, nil
	}
	return textAnswer(challenge), true, nil
}
