package verify_test

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/verify"
)

// Slack's url_verification, as "The Events API: url_verification"
// (api.slack.com/events/url_verification) shows it.
const slackURLVerification = `{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`

func handshaker(t *testing.T, cfg verify.Config) verify.Handshaker {
	t.Helper()
	h, ok := mustNew(t, cfg).(verify.Handshaker)
	require.True(t, ok, "%s answers handshakes", cfg.Scheme)
	return h
}

// TestHandshakesAnswered: each provider's documented handshake gets the
// documented answer.
func TestHandshakesAnswered(t *testing.T) {
	t.Parallel()
	zoomTS := strconv.FormatInt(zoomNow.Unix(), 10)
	slackSig := "v0=" + macSHA256Hex([]byte(slackSecret), "v0:"+slackTimestamp+":"+slackURLVerification)
	tests := []struct {
		name        string
		cfg         verify.Config
		req         verify.Request
		contentType string
		body        string
	}{
		{
			name: "slack url_verification", cfg: verify.Config{Scheme: verify.SchemeSlack, Secrets: secrets(slackSecret)},
			req:         verify.Request{Method: http.MethodPost, Body: []byte(slackURLVerification), Header: slackHeaders(slackTimestamp, slackSig), Now: slackNow},
			contentType: "application/json", body: `{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}`,
		},
		{
			name: "zoom endpoint.url_validation", cfg: verify.Config{Scheme: verify.SchemeZoom, Secrets: secrets(zoomSecret)},
			req:         verify.Request{Method: http.MethodPost, Body: []byte(zoomValidation), Header: zoomHeaders(zoomSecret, zoomTS, zoomValidation), Now: zoomNow},
			contentType: "application/json",
			body:        `{"plainToken":"qgg8vlvZRS6UYooatFL8Aw","encryptedToken":"` + macSHA256Hex([]byte(zoomSecret), "qgg8vlvZRS6UYooatFL8Aw") + `"}`,
		},
		{
			name: "zoom during a rotation: the signing secret's token", cfg: verify.Config{Scheme: verify.SchemeZoom, Secrets: secrets(zoomSecret, "the-next-secret-token")},
			req:         verify.Request{Method: http.MethodPost, Body: []byte(zoomValidation), Header: zoomHeaders(zoomSecret, zoomTS, zoomValidation), Now: zoomNow},
			contentType: "application/json",
			body:        `{"plainToken":"qgg8vlvZRS6UYooatFL8Aw","encryptedToken":"` + macSHA256Hex([]byte(zoomSecret), "qgg8vlvZRS6UYooatFL8Aw") + `"}`,
		},
		{
			name: "meta hub.challenge", cfg: metaConfig(metaSecret),
			req:         verify.Request{Method: http.MethodGet, Query: query("hub.mode", "subscribe", "hub.challenge", "1158201444", "hub.verify_token", metaVerifyToken)},
			contentType: "text/plain; charset=utf-8", body: "1158201444",
		},
		{
			name: "x crc_token, newest secret", cfg: verify.Config{Scheme: verify.SchemeX, Secrets: secrets("the-previous-consumer-secret", xSecret)},
			req:         verify.Request{Method: http.MethodGet, Query: query("crc_token", "9b4507b3-9040-4669-9ff4-4bd4cd4bbc33", "nonce", "MTY1NjUwMzg0OTY4MA")},
			contentType: "application/json",
			body:        `{"response_token":"sha256=` + macSHA256B64([]byte(xSecret), "9b4507b3-9040-4669-9ff4-4bd4cd4bbc33") + `"}`,
		},
		{
			name: "msgraph validationToken, decoded", cfg: verify.Config{Scheme: verify.SchemeMSGraph, Secrets: secrets(graphClientState)},
			req:         verify.Request{Method: http.MethodPost, Query: mustQuery(t, "validationToken=Validation%3A+Testing+client+application+reachability+for+subscription+Request-Id%3A+8f2cd2a8")},
			contentType: "text/plain; charset=utf-8", body: "Validation: Testing client application reachability for subscription Request-Id: 8f2cd2a8",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, ok, err := handshaker(t, tc.cfg).Handshake(tc.req)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, http.StatusOK, a.Status)
			require.Equal(t, tc.contentType, a.ContentType)
			if tc.contentType == "application/json" {
				require.JSONEq(t, tc.body, string(a.Body))
			} else {
				require.Equal(t, tc.body, string(a.Body))
			}
		})
	}
}

// TestZoomEncryptedTokenIsHex: encryptedToken is the 64 hex characters of
// HMAC-SHA256(secret token, plainToken), as Zoom's sample app computes it.
func TestZoomEncryptedTokenIsHex(t *testing.T) {
	t.Parallel()
	ts := strconv.FormatInt(zoomNow.Unix(), 10)
	a, ok, err := handshaker(t, verify.Config{Scheme: verify.SchemeZoom, Secrets: secrets(zoomSecret)}).Handshake(verify.Request{
		Method: http.MethodPost, Body: []byte(zoomValidation), Header: zoomHeaders(zoomSecret, ts, zoomValidation), Now: zoomNow,
	})
	require.NoError(t, err)
	require.True(t, ok)
	var got struct{ PlainToken, EncryptedToken string }
	require.NoError(t, json.Unmarshal(a.Body, &got))
	raw, err := hex.DecodeString(got.EncryptedToken)
	require.NoError(t, err)
	require.Len(t, raw, 32)
	require.Equal(t, "qgg8vlvZRS6UYooatFL8Aw", got.PlainToken)
}

// TestHandshakesRefused: a forged or malformed handshake never gets the
// challenge back: an error (401) where the provider signs it, the
// provider's documented refusal (Meta: 403), or 400 for a token that
// cannot be echoed.
func TestHandshakesRefused(t *testing.T) {
	t.Parallel()
	zoomTS := strconv.FormatInt(zoomNow.Unix(), 10)
	slackSig := "v0=" + macSHA256Hex([]byte(slackSecret), "v0:"+slackTimestamp+":"+slackURLVerification)
	forgedSlack := slackHeaders(slackTimestamp, "v0="+macSHA256Hex([]byte("not the signing secret"), "v0:"+slackTimestamp+":"+slackURLVerification))
	slack := verify.Config{Scheme: verify.SchemeSlack, Secrets: secrets(slackSecret)}
	zoom := verify.Config{Scheme: verify.SchemeZoom, Secrets: secrets(zoomSecret)}
	meta := metaConfig(metaSecret)
	x := verify.Config{Scheme: verify.SchemeX, Secrets: secrets(xSecret)}
	graph := verify.Config{Scheme: verify.SchemeMSGraph, Secrets: secrets(graphClientState)}
	metaGet := func(kv ...string) verify.Request { return verify.Request{Method: http.MethodGet, Query: query(kv...)} }
	long := strings.Repeat("c", 1025)
	tests := []struct {
		name   string
		cfg    verify.Config
		req    verify.Request
		status int // 0: an ErrUnverified error
		leak   string
	}{
		{"slack forged signature", slack, verify.Request{Body: []byte(slackURLVerification), Header: forgedSlack, Now: slackNow}, 0, "3eZbrw1a"},
		{"slack unsigned", slack, verify.Request{Body: []byte(slackURLVerification), Header: http.Header{}, Now: slackNow}, 0, "3eZbrw1a"},
		{"slack stale", slack, verify.Request{Body: []byte(slackURLVerification), Header: slackHeaders(slackTimestamp, slackSig), Now: slackNow.Add(time.Hour)}, 0, "3eZbrw1a"},
		{"zoom forged signature", zoom, verify.Request{Body: []byte(zoomValidation), Header: zoomHeaders("guessed-secret-token", zoomTS, zoomValidation), Now: zoomNow}, 0, "qgg8vlvZ"},
		{"zoom stale", zoom, verify.Request{Body: []byte(zoomValidation), Header: zoomHeaders(zoomSecret, zoomTS, zoomValidation), Now: zoomNow.Add(10 * time.Minute)}, 0, "qgg8vlvZ"},
		{"meta wrong verify token", meta, metaGet("hub.mode", "subscribe", "hub.challenge", "1158201444", "hub.verify_token", "meatyhamhocks"), http.StatusForbidden, "1158201444"},
		{"meta no verify token", meta, metaGet("hub.mode", "subscribe", "hub.challenge", "1158201444"), http.StatusForbidden, "1158201444"},
		{"meta two verify tokens", meta, metaGet("hub.mode", "subscribe", "hub.challenge", "1158201444", "hub.verify_token", "x", "hub.verify_token", metaVerifyToken), http.StatusForbidden, "1158201444"},
		{"meta mode not subscribe", meta, metaGet("hub.mode", "unsubscribe", "hub.challenge", "1158201444", "hub.verify_token", metaVerifyToken), http.StatusForbidden, "1158201444"},
		{"meta challenge too long", meta, metaGet("hub.mode", "subscribe", "hub.challenge", long, "hub.verify_token", metaVerifyToken), http.StatusBadRequest, long},
		{"meta challenge missing", meta, metaGet("hub.mode", "subscribe", "hub.verify_token", metaVerifyToken), http.StatusBadRequest, ""},
		{"x crc_token too long", x, verify.Request{Method: http.MethodGet, Query: query("crc_token", long)}, http.StatusBadRequest, long},
		{"x two crc_tokens", x, verify.Request{Method: http.MethodGet, Query: query("crc_token", "a", "crc_token", "b")}, http.StatusBadRequest, ""},
		{"msgraph token too long", graph, verify.Request{Method: http.MethodPost, Query: query("validationToken", long)}, http.StatusBadRequest, long},
		{"msgraph empty token", graph, verify.Request{Method: http.MethodPost, Query: query("validationToken", "")}, http.StatusBadRequest, ""},
		{"msgraph token not UTF-8", graph, verify.Request{Method: http.MethodPost, Query: query("validationToken", "\xff")}, http.StatusBadRequest, "\xff"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, ok, err := handshaker(t, tc.cfg).Handshake(tc.req)
			if tc.status == 0 {
				requireUnverified(t, err, slackSecret, zoomSecret)
				return
			}
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, tc.status, a.Status)
			if tc.leak != "" {
				require.NotContains(t, string(a.Body), tc.leak)
			}
		})
	}
}

// TestNotHandshakes: an ordinary delivery (and a GET of another scheme's
// shape) is not a handshake: the edge verifies and stores the delivery, and
// answers such a GET 405.
func TestNotHandshakes(t *testing.T) {
	t.Parallel()
	zoomTS := strconv.FormatInt(zoomNow.Unix(), 10)
	mentions := `{"type":"event_callback","event":{"type":"message","text":"what is url_verification?"}}`
	slackSig := "v0=" + macSHA256Hex([]byte(slackSecret), "v0:"+slackTimestamp+":"+mentions)
	tests := []struct {
		name string
		cfg  verify.Config
		req  verify.Request
	}{
		{"slack event mentioning url_verification", verify.Config{Scheme: verify.SchemeSlack, Secrets: secrets(slackSecret)},
			verify.Request{Method: http.MethodPost, Body: []byte(mentions), Header: slackHeaders(slackTimestamp, slackSig), Now: slackNow}},
		{"slack GET", verify.Config{Scheme: verify.SchemeSlack, Secrets: secrets(slackSecret)}, verify.Request{Method: http.MethodGet, Query: query("challenge", "c")}},
		{"zoom event", verify.Config{Scheme: verify.SchemeZoom, Secrets: secrets(zoomSecret)},
			verify.Request{Method: http.MethodPost, Body: []byte(zoomEvent), Header: zoomHeaders(zoomSecret, zoomTS, zoomEvent), Now: zoomNow}},
		{"meta POST", metaConfig(metaSecret), verify.Request{Method: http.MethodPost, Body: []byte(metaEvent), Query: query("hub.mode", "subscribe")}},
		{"meta GET without hub.mode", metaConfig(metaSecret), verify.Request{Method: http.MethodGet, Query: query("crc_token", "t")}},
		{"x POST", verify.Config{Scheme: verify.SchemeX, Secrets: secrets(xSecret)}, verify.Request{Method: http.MethodPost, Body: []byte(xEvent), Query: query("crc_token", "t")}},
		{"x GET without crc_token", verify.Config{Scheme: verify.SchemeX, Secrets: secrets(xSecret)}, verify.Request{Method: http.MethodGet, Query: query("hub.mode", "subscribe")}},
		{"msgraph notification", verify.Config{Scheme: verify.SchemeMSGraph, Secrets: secrets(graphClientState)}, verify.Request{Method: http.MethodPost, Body: []byte(graphChange)}},
		{"msgraph GET", verify.Config{Scheme: verify.SchemeMSGraph, Secrets: secrets(graphClientState)}, verify.Request{Method: http.MethodGet, Query: query("validationToken", "t")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, ok, err := handshaker(t, tc.cfg).Handshake(tc.req)
			require.NoError(t, err)
			require.False(t, ok)
		})
	}
}

func mustQuery(t *testing.T, raw string) url.Values {
	t.Helper()
	q, err := url.ParseQuery(raw)
	require.NoError(t, err)
	return q
}
