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
	var msg struct {
		Type      string `json:"type"`
		Challenge string `json:"challenge"`
	}
	if json.Unmarshal(r.Body, &msg) != nil || msg.Type != "url_verification" {
		return Answer{}, false, nil
	}
	if !echoable(msg.Challenge) {
		return badToken("challenge"), true, nil
	}
	return jsonAnswer(map[string]string{"challenge": msg.Challenge}), true, nil
}

var _ Handshaker = slackVerifier{}
