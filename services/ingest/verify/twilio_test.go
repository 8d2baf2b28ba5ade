package verify_test

import (
	"crypto/sha1" //nolint:gosec // Twilio's scheme is HMAC-SHA1
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/verify"
)

// Published Twilio vectors. The auth token, URL, parameters and signatures
// are those of twilio-go client/request_validator_test.go and twilio-python
// tests/unit/test_request_validator.py (the same values in both), except
// twDocsSig: the worked example of Twilio's "Webhooks security" page, whose
// Caller and From are +12349013030.
const (
	twToken   = "12345"
	twURL     = "https://mycompany.com/myapp.php?foo=1&bar=2"
	twSig     = "RSOYDt4T1cUTdK1PDd93/VVr8B8=" // twURL, twParams
	twSig443  = "kvajT1Ptam85bY51eRf/AJRuM3w=" // twURL with :443, twParams
	twSig80   = "0ZXoZLH/DfblKGATFgpif+LLRf4=" // twURL as http with :80, twParams
	twSig1234 = "Zmvh+3yNM1Phv2jhDCwEM3q5ebU=" // twURL as http with :1234, twParams
	twDupSig  = "IK+Dwps556ElfBT0I3Rgjkr1wJU=" // twURL, Sid, SidAccount and Digits twice (python)
	twDocsSig = "0/KCTR6DLpKmkAf8muzZqo1nDgQ=" // twURL, twParams with Caller and From +12349013030

	twBody          = `{"property": "value", "boolean": true}`
	twBodyHash      = "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620"
	twBodySig       = "a9nBmqA0ju/hNViExpshrM61xv4=" // twURL + "&bodySHA256=" + twBodyHash
	twBodyOnlySig   = "y77kIzt2vzLz71DgmJGsen2scGs=" // "https://mycompany.com/myapp.php?bodySHA256=" + twBodyHash
	twIdempotency   = "a1b2c3d4-idempotency-token"
	twFormType      = "application/x-www-form-urlencoded"
	twFormTypeUTF8  = "application/x-www-form-urlencoded; charset=UTF-8"
	twJSONType      = "application/json"
	twOtherToken    = "another-auth-token-0001"
	twBodyOnlyURL   = "https://mycompany.com/myapp.php?bodySHA256=" + twBodyHash
	twURLWithBody   = twURL + "&bodySHA256=" + twBodyHash
	twURLWithPort   = "https://mycompany.com:1234/myapp.php?foo=1&bar=2"
	twURLHTTP       = "http://mycompany.com/myapp.php?foo=1&bar=2"
	twURLHTTP1234   = "http://mycompany.com:1234/myapp.php?foo=1&bar=2"
	twURLHTTPS443   = "https://mycompany.com:443/myapp.php?foo=1&bar=2"
	twDocsCaller    = "+12349013030"
	twLibraryCaller = "+14158675309"
)

// twParams is the libraries' form; caller is Caller's and From's value.
func twParams(caller string) url.Values {
	return url.Values{
		"CallSid": {"CA1234567890ABCDE"}, "Caller": {caller}, "Digits": {"1234"},
		"From": {caller}, "To": {"+18005551212"},
	}
}

// twForm is twParams encoded as Twilio posts it.
func twForm(caller string) string { return twParams(caller).Encode() }

func twHeader(sig, contentType string) http.Header {
	return header("X-Twilio-Signature", sig, "Content-Type", contentType)
}

// twMAC signs independently of the package, for the constructed cases the
// published vectors do not cover.
func twMAC(key, signed string) string {
	return base64.StdEncoding.EncodeToString(mac(sha1.New, []byte(key), signed))
}

func TestTwilioPublishedVectors(t *testing.T) {
	t.Parallel()
	form := twForm(twLibraryCaller)
	tests := []struct {
		name, url, body, contentType, sig string
	}{
		{"form post", twURL, form, twFormType, twSig},
		{"form post, parameters out of order", twURL,
			"To=%2B18005551212&Digits=1234&From=%2B14158675309&CallSid=CA1234567890ABCDE&Caller=%2B14158675309", twFormType, twSig},
		{"form post with a charset", twURL, form, twFormTypeUTF8, twSig},
		{"docs example", twURL, twForm(twDocsCaller), twFormType, twDocsSig},
		{"repeated parameter", twURL, "Sid=CA123&SidAccount=AC123&Digits=5678&Digits=1234", twFormType, twDupSig},
		{"https with a port, signed without it", twURLWithPort, form, twFormType, twSig},
		{"https without a port, signed with :443", twURL, form, twFormType, twSig443},
		{"https with :443, signed without it", twURLHTTPS443, form, twFormType, twSig},
		{"http without a port, signed with :80", twURLHTTP, form, twFormType, twSig80},
		{"http with a port, signed with it", twURLHTTP1234, form, twFormType, twSig1234},
		{"json body with bodySHA256", twURLWithBody, twBody, twJSONType, twBodySig},
		{"json body, bodySHA256 the only parameter", twBodyOnlyURL, twBody, twJSONType, twBodyOnlySig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := mustNew(t, verify.Config{Scheme: verify.SchemeTwilio, Secrets: secrets(twToken)})
			h := twHeader(tc.sig, tc.contentType)
			h.Set("I-Twilio-Idempotency-Token", twIdempotency)
			res, err := v.Verify(verify.Request{Body: []byte(tc.body), Header: h, URL: tc.url})
			require.NoError(t, err)
			require.Equal(t, verify.Result{Scheme: verify.SchemeTwilio, DeliveryID: twIdempotency}, res,
				"the idempotency token is the delivery id, and it is not signed")
		})
	}
}

func TestTwilioRefusals(t *testing.T) {
	t.Parallel()
	form := twForm(twLibraryCaller)
	altered := func(key, value string) string {
		p := twParams(twLibraryCaller)
		p.Set(key, value)
		return p.Encode()
	}
	tests := []struct {
		name, url, body, contentType, sig string
		secrets                           []string
		header                            http.Header
	}{
		{name: "altered parameter", body: altered("Digits", "9999")},
		{name: "added parameter", body: form + "&Extra=1"},
		{name: "removed parameter", body: strings.Replace(form, "&Digits=1234", "", 1)},
		{name: "parameter renamed", body: strings.Replace(form, "Digits=", "digits=", 1)},
		{name: "altered query", url: strings.Replace(twURL, "bar=2", "bar=3", 1)},
		{name: "query dropped", url: "https://mycompany.com/myapp.php"},
		{name: "other path", url: strings.Replace(twURL, "myapp.php", "other.php", 1)},
		{name: "other host", url: strings.Replace(twURL, "mycompany.com", "evil.example", 1)},
		{name: "http instead of https", url: twURLHTTP},
		{name: "https signature on a port other than it was signed with", url: strings.Replace(twURLHTTP1234, "http:", "https:", 1), sig: twSig1234},
		{name: "wrong auth token", secrets: []string{twOtherToken}},
		{name: "flipped bit in signature", sig: flipB64(t, twSig)},
		{name: "truncated signature", sig: twSig[:len(twSig)-4]},
		{name: "signature not base64", sig: "RSOYDt4T1cUTdK1PDd93/VVr8B8"},
		{name: "missing signature", header: header("Content-Type", twFormType)},
		{name: "repeated signature", header: header("X-Twilio-Signature", twSig, "X-Twilio-Signature", twSig, "Content-Type", twFormType)},
		{name: "form signature on a body labelled json", contentType: twJSONType},
		{name: "form body that does not parse", body: form + "&%zz=1"},
		{name: "json body altered", url: twURLWithBody, body: strings.Replace(twBody, "value", "valuf", 1), contentType: twJSONType, sig: twBodySig},
		{name: "json body, bodySHA256 removed from the url", body: twBody, contentType: twJSONType, sig: twBodySig},
		{name: "json body, bodySHA256 repeated", url: twURLWithBody + "&bodySHA256=" + twBodyHash, body: twBody, contentType: twJSONType, sig: twBodySig},
		{
			name: "a body no signature covers: not a form, no bodySHA256",
			body: twBody, contentType: twJSONType, sig: twMAC(twToken, twURL),
		},
		{name: "no request url", url: "-"},
		{name: "relative request url", url: "/myapp.php?foo=1&bar=2"},
		{name: "request url of another scheme", url: strings.Replace(twURL, "https:", "ftp:", 1)},
		{name: "request url with credentials", url: strings.Replace(twURL, "https://", "https://user:pass@", 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			switch tc.url {
			case "":
				tc.url = twURL
			case "-":
				tc.url = ""
			}
			if tc.body == "" {
				tc.body = form
			}
			if tc.contentType == "" {
				tc.contentType = twFormType
			}
			if tc.sig == "" {
				tc.sig = twSig
			}
			if tc.secrets == nil {
				tc.secrets = []string{twToken}
			}
			if tc.header == nil {
				tc.header = twHeader(tc.sig, tc.contentType)
			}
			v := mustNew(t, verify.Config{Scheme: verify.SchemeTwilio, Secrets: secrets(tc.secrets...)})
			res, err := v.Verify(verify.Request{Body: []byte(tc.body), Header: tc.header, URL: tc.url})
			requireUnverified(t, err, twToken, twSig)
			require.Equal(t, verify.Result{}, res)
		})
	}
}

// TestTwilioConstructed covers what the published vectors do not: the URL
// alone signs an empty body, rotation, and no idempotency token.
func TestTwilioConstructed(t *testing.T) {
	t.Parallel()
	v := mustNew(t, verify.Config{Scheme: verify.SchemeTwilio, Secrets: secrets(twOtherToken, twToken)})
	res, err := v.Verify(verify.Request{Header: twHeader(twMAC(twToken, twURL), twJSONType), URL: twURL})
	require.NoError(t, err, "an empty body: the URL alone is signed")
	require.Equal(t, verify.Result{Scheme: verify.SchemeTwilio}, res)

	_, err = v.Verify(verify.Request{Body: []byte(twForm(twLibraryCaller)), Header: twHeader(twSig, twFormType), URL: twURL})
	require.NoError(t, err, "rotation: the second token matches")

	_, err = v.Verify(verify.Request{Header: twHeader(twMAC(twToken, twURL), twJSONType), URL: twURL + "x"})
	requireUnverified(t, err)
}
