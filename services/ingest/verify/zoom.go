package verify

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// zoomVerifier checks Zoom's webhook signing: x-zm-signature is
// "v0=" + hex HMAC-SHA256(secret token, "v0:" + x-zm-request-timestamp +
// ":" + body), the timestamp in seconds within the tolerance. Zoom signs no
// delivery id.
type zoomVerifier struct {
	secrets   [][]byte
	tolerance time.Duration
}

func (v zoomVerifier) Verify(r Request) (Result, error) {
	_, res, err := v.verify(r)
	return res, err
}

// verify also returns the secret that signed r, which a URL validation's
// answer is computed with.
func (v zoomVerifier) verify(r Request) ([]byte, Result, error) {
	rawTS, err := singleHeader(r.Header, "X-Zm-Request-Timestamp")
	if err != nil {
		return nil, Result{}, err
	}
	header, err := singleHeader(r.Header, "X-Zm-Signature")
	if err != nil {
		return nil, Result{}, err
	}
	ts, err := signedTimestamp(rawTS, r.Now, v.tolerance)
	if err != nil {
		return nil, Result{}, err
	}
	sig, err := hexSHA256("zoom", header, "v0=", "unsupported signature version")
	if err != nil {
		return nil, Result{}, err
	}
	secret := matchingSecret(sha256.New, v.secrets, sig, []byte("v0:"+rawTS+":"), r.Body)
	if secret == nil {
		return nil, Result{}, unverified("zoom: signature mismatch")
	}
	return secret, Result{Scheme: SchemeZoom, Timestamp: ts}, nil
}

// Handshake answers Zoom's endpoint.url_validation, a signed POST
// {"payload":{"plainToken":p},"event_ts":…,"event":"endpoint.url_validation"}:
// 200 {"plainToken":p,"encryptedToken":hex HMAC-SHA256(secret token, p)}.
func (v zoomVerifier) Handshake(r Request) (Answer, bool, error) {
	if isGet(r) || !bytes.Contains(r.Body, []byte("endpoint.url_validation")) {
		return Answer{}, false, nil
	}
	secret, _, err := v.verify(r)
	if err != nil {
		return Answer{}, false, err
	}
	plain, ok := zoomPlainToken(r.Body)
	if !ok {
		return Answer{}, false, nil
	}
	if !echoable(plain) {
		return badToken("payload.plainToken"), true, nil
	}
	return jsonAnswer(struct {
		PlainToken     string `json:"plainToken"`
		EncryptedToken string `json:"encryptedToken"`
	}{plain, hex.EncodeToString(hmacSHA256(secret, plain))}), true, nil
}

// zoomPlainToken is the plainToken of an endpoint.url_validation body;
// false for any other body.
func zoomPlainToken(body []byte) (string, bool) {
	var msg struct {
		Event   string `json:"event"`
		Payload struct {
			PlainToken string `json:"plainToken"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		return "", false
	}
	return msg.Payload.PlainToken, msg.Event == "endpoint.url_validation"
}
