//go:build integration

package ingest_test

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // Twilio's scheme is HMAC-SHA1
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Twilio's published vector (twilio-go client/request_validator_test.go,
// twilio-python tests/unit/test_request_validator.py): auth token 12345,
// URL https://mycompany.com/myapp.php?foo=1&bar=2, and, for a form post,
// these parameters; for a JSON body, bodySHA256 appended to the URL.
const (
	twilioToken     = "12345"
	twilioPublicURL = "https://mycompany.com/myapp.php"
	twilioQuery     = "foo=1&bar=2"
	twilioFormSig   = "RSOYDt4T1cUTdK1PDd93/VVr8B8="
	twilioJSON      = `{"property": "value", "boolean": true}`
	twilioJSONHash  = "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620"
	twilioJSONSig   = "a9nBmqA0ju/hNViExpshrM61xv4="
)

func twilioForm(digits string) []byte {
	return []byte(url.Values{
		"CallSid": {"CA1234567890ABCDE"}, "Caller": {"+14158675309"}, "Digits": {digits},
		"From": {"+14158675309"}, "To": {"+18005551212"},
	}.Encode())
}

func twilioHeaders(sig, contentType, token string) http.Header {
	return http.Header{"X-Twilio-Signature": {sig}, "Content-Type": {contentType}, "I-Twilio-Idempotency-Token": {token}}
}

// TestHookTwilio: Twilio's published deliveries, posted to an endpoint whose
// public_url is the URL Twilio signed, are stored once; the request's query
// is part of what is signed; anything altered is refused and nothing stored.
func TestHookTwilio(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// body_dedup_window_seconds: Twilio's default on create (its id is unsigned).
	slug := e.endpoint(t, "twilio", []byte(twilioToken), "public_url = '"+twilioPublicURL+"', body_dedup_window_seconds = 259200")
	form := "application/x-www-form-urlencoded"
	events := func() int { return e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`) }

	code, resp := e.post(t, slug+"?"+twilioQuery, twilioForm("1234"), twilioHeaders(twilioFormSig, form, "idem-1"))
	require.Equal(t, http.StatusOK, code, resp)
	require.Contains(t, resp, `"accepted"`)
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1 AND verified_scheme = 'twilio'
		AND delivery_id = 'idem-1' AND body_sha256 IS NOT NULL`), "the idempotency token is unsigned: the body hash dedups too")
	code, resp = e.post(t, slug+"?"+twilioQuery, twilioForm("1234"), twilioHeaders(twilioFormSig, form, "idem-1"))
	require.Equal(t, http.StatusOK, code, resp)
	require.Contains(t, resp, `"duplicate"`)
	require.Equal(t, 1, events(), "stored once")

	for name, r := range map[string]struct {
		query string
		body  []byte
		h     http.Header
	}{
		"altered parameter":          {twilioQuery, twilioForm("9999"), twilioHeaders(twilioFormSig, form, "idem-2")},
		"altered query":              {"foo=1&bar=3", twilioForm("1234"), twilioHeaders(twilioFormSig, form, "idem-3")},
		"query dropped":              {"", twilioForm("1234"), twilioHeaders(twilioFormSig, form, "idem-4")},
		"json body altered":          {twilioQuery + "&bodySHA256=" + twilioJSONHash, []byte(strings.Replace(twilioJSON, "value", "valuf", 1)), twilioHeaders(twilioJSONSig, "application/json", "idem-5")},
		"json body, no bodySHA256":   {twilioQuery, []byte(twilioJSON), twilioHeaders(twilioJSONSig, "application/json", "idem-6")},
		"form post without a header": {twilioQuery, twilioForm("1234"), http.Header{"Content-Type": {form}}},
	} {
		target := slug
		if r.query != "" {
			target += "?" + r.query
		}
		code, resp := e.post(t, target, r.body, r.h)
		require.Equal(t, http.StatusUnauthorized, code, "%s: %s", name, resp)
	}
	require.Equal(t, 1, events(), "nothing refused is stored")

	code, resp = e.post(t, slug+"?"+twilioQuery+"&bodySHA256="+twilioJSONHash, []byte(twilioJSON), twilioHeaders(twilioJSONSig, "application/json", "idem-7"))
	require.Equal(t, http.StatusOK, code, resp)
	require.Equal(t, 2, events())
}

// TestHookTwilioWithoutPublicURL: without public_url the URL is what the
// node saw (http, its Host); X-Forwarded-* headers are not trusted, and
// the published signature (over Twilio's URL) does not verify here.
func TestHookTwilioWithoutPublicURL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	slug := e.endpoint(t, "twilio", []byte(twilioToken), "")
	form := "application/x-www-form-urlencoded"
	sign := func(u string, body []byte) string {
		m := hmac.New(sha1.New, []byte(twilioToken))
		m.Write([]byte(u))
		values, err := url.ParseQuery(string(body))
		require.NoError(t, err)
		for _, k := range []string{"CallSid", "Caller", "Digits", "From", "To"} { // sorted by name
			m.Write([]byte(k + values.Get(k)))
		}
		return base64.StdEncoding.EncodeToString(m.Sum(nil))
	}
	seen := e.url + "/hooks/" + slug + "?" + twilioQuery
	code, resp := e.post(t, slug+"?"+twilioQuery, twilioForm("1234"), twilioHeaders(sign(seen, twilioForm("1234")), form, "idem-1"))
	require.Equal(t, http.StatusOK, code, resp)

	forwarded := twilioHeaders(sign("https://hooks.example.com/hooks/"+slug+"?"+twilioQuery, twilioForm("1234")), form, "idem-2")
	forwarded.Set("X-Forwarded-Proto", "https")
	forwarded.Set("X-Forwarded-Host", "hooks.example.com")
	code, resp = e.post(t, slug+"?"+twilioQuery, twilioForm("1234"), forwarded)
	require.Equal(t, http.StatusUnauthorized, code, resp)
	code, resp = e.post(t, slug+"?"+twilioQuery, twilioForm("1234"), twilioHeaders(twilioFormSig, form, "idem-3"))
	require.Equal(t, http.StatusUnauthorized, code, resp)
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`))
}
