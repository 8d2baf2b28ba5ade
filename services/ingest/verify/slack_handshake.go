package verify

import (
	"bytes"
	"encoding/json"
)

// Handshake answers Slack's url_verification: a POST signed like any Slack
// request, JSON {"token":…, "challenge":…, "type":"url_verification"}, to
// be answered 200 with the challenge. It is verified before its body is
// parsed; a body that merely mentions url_verification, and is not one, is
// an ordinary event.
func (v slackVerifier) Handshake(r Request) (Answer, bool, error) {
	if isGet(r) || !bytes.Contains(r.Body, []byte("url_verification")) {
		return Answer{}, false, nil
	}
	if _, err := v.Verify(r); err != nil {
		return Answer{}, false, err
	}
	challenge, ok := slackChallenge(r.Body)
	if !ok {
		return Answer{}, false, nil
	}
	if !echoable(challenge) {
		return badToken("challenge"), true, nil
	}
	return jsonAnswer(map[string]string{"challenge": challenge}), true, nil
}

// slackChallenge is the challenge of a url_verification body; false for any
// other body.
func slackChallenge(body []byte) (string, bool) {
	var msg struct {
		Type      string `json:"type"`
		Challenge string `json:"challenge"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		return "", false
	}
	return msg.Challenge, msg.Type == "url_verification"
}

var _ Handshaker = slackVerifier{}
