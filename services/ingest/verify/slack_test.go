package verify_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/verify"
)

// Published vector: Slack API docs, "Verifying requests from Slack"
// (api.slack.com/authentication/verifying-requests-from-slack, step-by-step
// walk-through).
const (
	slackSecret    = "8f742231b10e8888abcd99yyyzzz85a5"
	slackTimestamp = "1531420618"
	slackBody      = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V" +
		"&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=" +
		"&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN" +
		"&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	slackSignature = "a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
)

var slackNow = time.Unix(1531420618, 0)

func slackHeaders(ts, sig string) http.Header {
	return header("X-Slack-Request-Timestamp", ts, "X-Slack-Signature", sig)
}

func TestSlack(t *testing.T) {
	t.Parallel()
	valid := "v0=" + slackSignature
	tests := []struct {
		name    string
		secrets []string
		header  http.Header
		body    string
		now     time.Time
		ok      bool
	}{
		{name: "published vector", ok: true},
		{name: "rotation: second secret matches", ok: true, secrets: []string{"previous-signing-secret", slackSecret}},
		{name: "oldest accepted timestamp", ok: true, now: slackNow.Add(5 * time.Minute)},
		{name: "empty signature", header: slackHeaders(slackTimestamp, "")},
		{name: "empty hex", header: slackHeaders(slackTimestamp, "v0=")},
		{name: "unknown version", header: slackHeaders(slackTimestamp, "v1="+slackSignature)},
		{name: "truncated signature", header: slackHeaders(slackTimestamp, valid[:len(valid)-2])},
		{name: "flipped bit in signature", header: slackHeaders(slackTimestamp, "v0="+flipHex(t, slackSignature))},
		{name: "flipped bit in body", body: string(flipBody(slackBody))},
		{name: "non-numeric timestamp", header: slackHeaders("abc", valid)},
		{name: "other timestamp", header: slackHeaders("1531420619", valid), now: slackNow},
		{name: "timestamp too old", now: slackNow.Add(5*time.Minute + time.Second)},
		{name: "timestamp too far in the future", now: slackNow.Add(-5*time.Minute - time.Second)},
		{name: "missing timestamp", header: header("X-Slack-Signature", valid)},
		{name: "missing signature", header: header("X-Slack-Request-Timestamp", slackTimestamp)},
		{name: "wrong secret", secrets: []string{"8f742231b10e8888abcd99yyyzzz85a6"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.secrets == nil {
				tc.secrets = []string{slackSecret}
			}
			if tc.header == nil {
				tc.header = slackHeaders(slackTimestamp, valid)
			}
			if tc.body == "" {
				tc.body = slackBody
			}
			if tc.now.IsZero() {
				tc.now = slackNow
			}
			v := mustNew(t, verify.Config{Scheme: verify.SchemeSlack, Secrets: secrets(tc.secrets...)})
			res, err := v.Verify(verify.Request{Body: []byte(tc.body), Header: tc.header, Now: tc.now})
			if !tc.ok {
				requireUnverified(t, err, slackSecret, slackSignature)
				return
			}
			require.NoError(t, err)
			require.Equal(t, verify.Result{Scheme: verify.SchemeSlack, Timestamp: slackNow}, res)
		})
	}
}
