package verify

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// xVerifier checks the X (Twitter) Account Activity API's webhooks:
// x-twitter-webhooks-signature is "sha256=" + base64 HMAC-SHA256(consumer
// secret, body). X signs no delivery id.
type xVerifier struct{ secrets [][]byte }

func (v xVerifier) Verify(r Request) (Result, error) {
	header, err := singleHeader(r.Header, "X-Twitter-Webhooks-Signature")
	if err != nil {
		return Result{}, err
	}
	encoded, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return Result{}, unverified("x: signature lacks sha256= prefix")
	}
	sig, err := strictBase64.DecodeString(encoded)
	if err != nil || len(sig) != sha256.Size {
		return Result{}, unverified("x: malformed signature")
	}
	if err := sha256Matches("x", v.secrets, sig, r.Body); err != nil {
		return Result{}, err
	}
	return Result{Scheme: SchemeX}, nil
}

// Handshake answers X's challenge-response check (CRC), GET ?crc_token=T
// (sent on registration and then about hourly): 200
// {"response_token":"sha256=" + base64 HMAC-SHA256(consumer secret, T)}.
// X does not sign it; the answer proves this endpoint holds the secret. It
// is computed with the newest secret: after a rotation, X holds the new one.
func (v xVerifier) Handshake(r Request) (Answer, bool, error) {
	if !isGet(r) || !r.Query.Has("crc_token") {
		return Answer{}, false, nil
	}
	token, ok := singleQuery(r.Query, "crc_token")
	if !ok || !echoable(token) {
		return badToken("crc_token"), true, nil
	}
	mac := hmacSHA256(v.secrets[len(v.secrets)-1], token)
	return jsonAnswer(map[string]string{"response_token": "sha256=" + base64.StdEncoding.EncodeToString(mac)}), true, nil
}
