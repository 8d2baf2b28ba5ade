//go:build integration

package ingest_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/metrics"
	"github.com/switchboard/switchboard/services/ingest"
	"github.com/switchboard/switchboard/services/ingest/sources"
	"github.com/switchboard/switchboard/services/ingest/verify"
)

// hsEnv is env with the edge's GET route too (as the node registers it)
// and a metrics registry, and endpoints created through sources as the
// admin API creates them (a Meta verify token stored as its digest).
type hsEnv struct {
	*env
	metrics *metrics.Registry
	src     *sources.Store
}

func newHSEnv(t *testing.T) *hsEnv {
	t.Helper()
	e := &hsEnv{env: newEnv(t), metrics: metrics.New(metrics.Options{})}
	srv := ingest.New(zap.NewNop(), e.pool, ingest.Options{SealingKeys: e.keys, Todos: e.queue.Todos(), Metrics: e.metrics})
	mux := http.NewServeMux()
	mux.Handle(ingest.HookPattern, srv.HookHandler())
	mux.Handle(ingest.HookGetPattern, srv.HookHandler())
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	e.url = hs.URL
	e.src = sources.New(e.pool, e.keys, nil)
	return e
}

// create makes an endpoint of scheme with secret (and, for meta, a verify
// token); f may change the other fields. It returns the slug.
func (e *hsEnv) create(t *testing.T, scheme verify.Scheme, secret, verifyToken string, f func(*sources.EndpointFields)) string {
	t.Helper()
	fields := sources.EndpointFields{Queue: "hooks", Verification: scheme, Enabled: true}
	if verifyToken != "" {
		var err error
		fields.VerifyTokenSHA256, err = sources.VerifyTokenDigest(verifyToken)
		require.NoError(t, err)
	}
	if f != nil {
		f(&fields)
	}
	ep, _, err := e.src.CreateEndpoint(t.Context(), auth.Tenant{HumanID: e.human}, e.human, fields, secret)
	require.NoError(t, err)
	return ep.Slug
}

// answer is what the edge replied.
type answer struct {
	code        int
	contentType string
	body        string
	header      http.Header
}

// send makes one request to /hooks/{slug}?rawQuery.
func (e *hsEnv) send(t *testing.T, method, slug, rawQuery string, body []byte, header http.Header) answer {
	t.Helper()
	target := e.url + "/hooks/" + slug
	if rawQuery != "" {
		target += "?" + rawQuery
	}
	req, err := http.NewRequestWithContext(t.Context(), method, target, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{code: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: string(b), header: resp.Header}
}

// requireNothingStored: no event and no todo of the tenant exists.
func (e *hsEnv) requireNothingStored(t *testing.T) {
	t.Helper()
	require.Zero(t, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`), "a handshake is never an event")
	require.Zero(t, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1`), "nor a todo")
}

// requireStored: exactly n events of scheme, each with its todo.
func (e *hsEnv) requireStored(t *testing.T, scheme verify.Scheme, n int) {
	t.Helper()
	require.Equal(t, n, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1 AND verified_scheme = '`+string(scheme)+`'`))
	require.Equal(t, n, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1 AND event_id IS NOT NULL`))
}

func hexMAC(secret, msg string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

func b64MAC(secret, msg string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(msg))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Slack's documented url_verification body (api.slack.com/events/url_verification).
const (
	slackSigningSecret = "8f742231b10e8888abcd99yyyzzz85a5"
	slackChallenge     = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
	slackVerification  = `{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"` + slackChallenge + `","type":"url_verification"}`
)

// slackSigned signs body as Slack does ("v0:" + timestamp + ":" + body).
func slackSigned(secret string, ts time.Time, body string) http.Header {
	stamp := strconv.FormatInt(ts.Unix(), 10)
	return http.Header{
		"Content-Type": {"application/json"}, "X-Slack-Request-Timestamp": {stamp},
		"X-Slack-Signature": {"v0=" + hexMAC(secret, "v0:"+stamp+":"+body)},
	}
}

// TestSlackURLVerification: Slack's signed url_verification is answered
// with its challenge and stored nowhere; a forged or stale one is refused
// without the challenge; an ordinary signed event is stored.
func TestSlackURLVerification(t *testing.T) {
	t.Parallel()
	e := newHSEnv(t)
	slug := e.create(t, verify.SchemeSlack, slackSigningSecret, "", nil)

	a := e.send(t, http.MethodPost, slug, "", []byte(slackVerification), slackSigned(slackSigningSecret, time.Now(), slackVerification))
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Equal(t, "application/json", a.contentType)
	require.JSONEq(t, `{"challenge":"`+slackChallenge+`"}`, a.body)
	e.requireNothingStored(t)

	for name, h := range map[string]http.Header{
		"forged":   slackSigned("a-guessed-signing-secret", time.Now(), slackVerification),
		"stale":    slackSigned(slackSigningSecret, time.Now().Add(-time.Hour), slackVerification),
		"unsigned": {"Content-Type": {"application/json"}},
	} {
		a := e.send(t, http.MethodPost, slug, "", []byte(slackVerification), h)
		require.Equal(t, http.StatusUnauthorized, a.code, name)
		require.NotContains(t, a.body, slackChallenge, name)
	}
	e.requireNothingStored(t)

	event := `{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","team_id":"T061EG9R6","type":"event_callback","event_id":"Ev0PV52K21","event":{"type":"app_mention","text":"<@U0LAN0Z89> is it url_verification?"}}`
	a = e.send(t, http.MethodPost, slug, "", []byte(event), slackSigned(slackSigningSecret, time.Now(), event))
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, `"accepted"`)
	e.requireStored(t, verify.SchemeSlack, 1)
}

// Zoom's documented shapes (developers.zoom.us/docs/api/webhooks).
const (
	zoomSecretToken = "Wq8GqLx2Ri6zlrBY1yk9Nw"
	zoomPlainToken  = "qgg8vlvZRS6UYooatFL8Aw"
	zoomValidation  = `{"payload":{"plainToken":"` + zoomPlainToken + `"},"event_ts":1654503849680,"event":"endpoint.url_validation"}`
	zoomEvent       = `{"event":"meeting.started","event_ts":1626230691572,"payload":{"account_id":"AAAAAABBBB","object":{"id":"1234567890","uuid":"czLF6FFFoQOKgAB99DlDb9g==","host_id":"x1yCzABCDEfg23HiJKl4mN","topic":"My Meeting","type":8,"start_time":"2021-07-13T21:44:51Z","duration":60}}}`
)

func zoomSigned(secret string, ts time.Time, body string) http.Header {
	stamp := strconv.FormatInt(ts.Unix(), 10)
	return http.Header{
		"Content-Type": {"application/json; charset=utf-8"}, "X-Zm-Request-Timestamp": {stamp},
		"X-Zm-Signature": {"v0=" + hexMAC(secret, "v0:"+stamp+":"+body)},
	}
}

// TestZoomURLValidation: the signed endpoint.url_validation is answered
// {"plainToken","encryptedToken"} and not stored; forged or stale, refused
// without the token; ordinary signed events are stored, forged ones not.
func TestZoomURLValidation(t *testing.T) {
	t.Parallel()
	e := newHSEnv(t)
	slug := e.create(t, verify.SchemeZoom, zoomSecretToken, "", nil)

	a := e.send(t, http.MethodPost, slug, "", []byte(zoomValidation), zoomSigned(zoomSecretToken, time.Now(), zoomValidation))
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Equal(t, "application/json", a.contentType)
	require.JSONEq(t, `{"plainToken":"`+zoomPlainToken+`","encryptedToken":"`+hexMAC(zoomSecretToken, zoomPlainToken)+`"}`, a.body)
	e.requireNothingStored(t)

	for name, h := range map[string]http.Header{
		"forged": zoomSigned("a-guessed-secret-token", time.Now(), zoomValidation),
		"stale":  zoomSigned(zoomSecretToken, time.Now().Add(-10*time.Minute), zoomValidation),
	} {
		a := e.send(t, http.MethodPost, slug, "", []byte(zoomValidation), h)
		require.Equal(t, http.StatusUnauthorized, a.code, name)
		require.NotContains(t, a.body, zoomPlainToken, name)
	}
	a = e.send(t, http.MethodPost, slug, "", []byte(zoomEvent), zoomSigned("a-guessed-secret-token", time.Now(), zoomEvent))
	require.Equal(t, http.StatusUnauthorized, a.code)
	e.requireNothingStored(t)

	a = e.send(t, http.MethodPost, slug, "", []byte(zoomEvent), zoomSigned(zoomSecretToken, time.Now(), zoomEvent))
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, `"accepted"`)
	e.requireStored(t, verify.SchemeZoom, 1)
}

// Meta's documented verification request
// (developers.facebook.com/docs/graph-api/webhooks/getting-started).
const (
	metaAppSecret   = "6f1a0c2e9b8d7c3e5a4f2b1d0e9c8a7b"
	metaVerifyToken = "meatyhamhock"
	metaEvent       = `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},"messages":[{"from":"16505551234","id":"wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=","timestamp":"1749416383","type":"text","text":{"body":"Does it come in another color?"}}]},"field":"messages"}]}]}`
)

// TestMetaVerification: GET hub.challenge with the endpoint's verify token
// is answered with the challenge as text/plain; any other token 403 without
// it; neither is stored. Signed POSTs are stored, forged ones refused.
func TestMetaVerification(t *testing.T) {
	t.Parallel()
	e := newHSEnv(t)
	slug := e.create(t, verify.SchemeMeta, metaAppSecret, metaVerifyToken, nil)

	a := e.send(t, http.MethodGet, slug, "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token="+metaVerifyToken, nil, nil)
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Equal(t, "text/plain; charset=utf-8", a.contentType)
	require.Equal(t, "1158201444", a.body)
	require.Equal(t, "nosniff", a.header.Get("X-Content-Type-Options"))

	for _, q := range []string{
		"hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=meatyhamhocks",
		"hub.mode=subscribe&hub.challenge=1158201444",
		"hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=" + hex.EncodeToString(sha256Of(metaVerifyToken)),
	} {
		a := e.send(t, http.MethodGet, slug, q, nil, nil)
		require.Equal(t, http.StatusForbidden, a.code, q)
		require.NotContains(t, a.body, "1158201444", q)
	}
	e.requireNothingStored(t)

	forged := http.Header{"Content-Type": {"application/json"}, "X-Hub-Signature-256": {"sha256=" + hexMAC("not-the-app-secret", metaEvent)}}
	require.Equal(t, http.StatusUnauthorized, e.send(t, http.MethodPost, slug, "", []byte(metaEvent), forged).code)
	signed := http.Header{"Content-Type": {"application/json"}, "X-Hub-Signature-256": {"sha256=" + hexMAC(metaAppSecret, metaEvent)}}
	a = e.send(t, http.MethodPost, slug, "", []byte(metaEvent), signed)
	require.Equal(t, http.StatusOK, a.code, a.body)
	e.requireStored(t, verify.SchemeMeta, 1)
}

func sha256Of(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}
