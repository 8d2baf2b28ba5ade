//go:build integration

package ingest_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/sources"
	"github.com/switchboard/switchboard/services/ingest/verify"
)

// X's Account Activity API shapes (docs.x.com, "Securing webhooks").
const (
	xConsumerSecret = "s3cr3tConsumerKeySecretFromTheXDeveloperPortal00"
	xEvent          = `{"for_user_id":"2244994945","tweet_create_events":[{"id_str":"1301912281000000000","text":"@XDevelopers hello","user":{"id_str":"6253282","screen_name":"API"}}]}`
)

// TestXCRC: GET ?crc_token=T is answered {"response_token":"sha256=" +
// base64 HMAC-SHA256(consumer secret, T)} and not stored; signed POSTs are
// stored, forged ones refused.
func TestXCRC(t *testing.T) {
	t.Parallel()
	e := newHSEnv(t)
	slug := e.create(t, verify.SchemeX, xConsumerSecret, "", nil)
	const crc = "9b4507b3-9040-4669-9ff4-4bd4cd4bbc33"

	a := e.send(t, http.MethodGet, slug, "crc_token="+crc+"&nonce=MTY1NjUwMzg0OTY4MA", nil, nil)
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Equal(t, "application/json", a.contentType)
	require.JSONEq(t, `{"response_token":"sha256=`+b64MAC(xConsumerSecret, crc)+`"}`, a.body)
	e.requireNothingStored(t)

	forged := http.Header{"Content-Type": {"application/json"}, "X-Twitter-Webhooks-Signature": {"sha256=" + b64MAC("not-the-consumer-secret", xEvent)}}
	require.Equal(t, http.StatusUnauthorized, e.send(t, http.MethodPost, slug, "", []byte(xEvent), forged).code)
	signed := http.Header{"Content-Type": {"application/json"}, "X-Twitter-Webhooks-Signature": {"sha256=" + b64MAC(xConsumerSecret, xEvent)}}
	a = e.send(t, http.MethodPost, slug, "", []byte(xEvent), signed)
	require.Equal(t, http.StatusOK, a.code, a.body)
	e.requireStored(t, verify.SchemeX, 1)
}

// Microsoft Graph's shapes (learn.microsoft.com/graph/change-notifications-delivery-webhooks,
// .../change-notifications-lifecycle-events).
const (
	graphClientState = "secretClientValue"
	graphChange      = `{"value":[{"id":"lsgTZMr9KwAAA","subscriptionId":"c9bc8f63-3b7b-4b30-8b74-2d7f1a4a7e09","subscriptionExpirationDateTime":"2016-03-19T22:11:09.952Z","clientState":"secretClientValue","changeType":"created","resource":"users/45e4ae3e/messages/AAMkADI","tenantId":"84bd8158-6d4d-4958-8b9f-9d6445542f95","resourceData":{"@odata.type":"#Microsoft.Graph.Message","@odata.id":"Users/45e4ae3e/Messages/AAMkADI","@odata.etag":"W/\"CQAAABYAAADkrWGo7bouTKlsgTZMr9KwAAAUWRHf\"","id":"AAMkADI"}}]}`
	graphLifecycle   = `{"value":[{"lifecycleEvent":"reauthorizationRequired","subscriptionId":"c9bc8f63-3b7b-4b30-8b74-2d7f1a4a7e09","subscriptionExpirationDateTime":"2019-09-18T00:00:00.0000000Z","clientState":"secretClientValue","tenantId":"84bd8158-6d4d-4958-8b9f-9d6445542f95"}]}`
)

// TestMSGraphValidation: POST ?validationToken=T is answered 200 text/plain
// T, decoded, and not stored (also with the body Graph sends, and on the
// same URL used as lifecycleNotificationUrl); notifications carrying the
// clientState are stored, change and lifecycle alike; one without it is
// refused. Another scheme's endpoint never echoes a validationToken.
func TestMSGraphValidation(t *testing.T) {
	t.Parallel()
	e := newHSEnv(t)
	slug := e.create(t, verify.SchemeMSGraph, graphClientState, "", nil)
	const token = "Validation: Testing client application reachability for subscription Request-Id: 8f2cd2a8-7b4c-4b5e-9e4c-4f0c2a7d1b3e"

	a := e.send(t, http.MethodPost, slug, "validationToken="+url.QueryEscape(token), nil, http.Header{"Content-Type": {"text/plain; charset=utf-8"}})
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Equal(t, "text/plain; charset=utf-8", a.contentType)
	require.Equal(t, token, a.body)
	a = e.send(t, http.MethodPost, slug, "validationToken="+strings.Repeat("t", 1025), nil, nil)
	require.Equal(t, http.StatusBadRequest, a.code, "an unbounded token is not echoed")
	e.requireNothingStored(t)

	forged := strings.Replace(graphChange, graphClientState, "guessedClientValue", 1)
	require.Equal(t, http.StatusUnauthorized, e.send(t, http.MethodPost, slug, "", []byte(forged), nil).code)
	for _, body := range []string{graphChange, graphLifecycle} {
		a := e.send(t, http.MethodPost, slug, "", []byte(body), http.Header{"Content-Type": {"application/json"}})
		require.Equal(t, http.StatusOK, a.code, a.body)
	}
	e.requireStored(t, verify.SchemeMSGraph, 2)

	github := e.create(t, verify.SchemeGitHub, "", "", nil)
	a = e.send(t, http.MethodPost, github, "validationToken=echo-me", nil, nil)
	require.Equal(t, http.StatusUnauthorized, a.code)
	require.NotContains(t, a.body, "echo-me")
}

// TestHookGET: a GET that is no handshake of the endpoint's scheme is 405
// (Allow: POST); an unknown or disabled endpoint 404, as for a POST.
func TestHookGET(t *testing.T) {
	t.Parallel()
	e := newHSEnv(t)
	standard := e.create(t, verify.SchemeStandardWebhooks, "", "", nil)
	meta := e.create(t, verify.SchemeMeta, metaAppSecret, metaVerifyToken, nil)
	x := e.create(t, verify.SchemeX, xConsumerSecret, "", nil)
	disabled := e.create(t, verify.SchemeMeta, metaAppSecret, metaVerifyToken, func(f *sources.EndpointFields) { f.Enabled = false })
	live := e.create(t, verify.SchemeMeta, metaAppSecret, metaVerifyToken, nil)
	const handshake = "hub.mode=subscribe&hub.challenge=42&hub.verify_token=" + metaVerifyToken

	for name, c := range map[string]struct {
		slug, query string
		want        int
	}{
		"no handshake in its scheme": {standard, "crc_token=t", http.StatusMethodNotAllowed},
		"meta without hub.mode":      {meta, "crc_token=t", http.StatusMethodNotAllowed},
		"x without crc_token":        {x, handshake, http.StatusMethodNotAllowed},
		"unknown slug":               {"nosuchendpoint000000000", handshake, http.StatusNotFound},
		"disabled":                   {disabled, handshake, http.StatusNotFound},
		"enabled":                    {live, handshake, http.StatusOK},
	} {
		a := e.send(t, http.MethodGet, c.slug, c.query, nil, nil)
		require.Equal(t, c.want, a.code, "%s: %s", name, a.body)
		if c.want == http.StatusMethodNotAllowed {
			require.Equal(t, http.MethodPost, a.header.Get("Allow"), name)
		}
	}
	e.requireNothingStored(t)
}

// TestHandshakeRateLimitedAndCounted: the endpoint's rate applies to
// handshakes too (429 with Retry-After); an answered handshake is counted
// as outcome "handshake", a refused one by its status.
func TestHandshakeRateLimitedAndCounted(t *testing.T) {
	t.Parallel()
	e := newHSEnv(t)
	slug := e.create(t, verify.SchemeX, xConsumerSecret, "", func(f *sources.EndpointFields) { f.RateLimitPerSecond = 1 })
	first := e.send(t, http.MethodGet, slug, "crc_token=a", nil, nil)
	require.Equal(t, http.StatusOK, first.code, first.body)
	second := e.send(t, http.MethodGet, slug, "crc_token=b", nil, nil)
	require.Equal(t, http.StatusTooManyRequests, second.code)
	require.NotEmpty(t, second.header.Get("Retry-After"))
	require.NotContains(t, second.body, "response_token")

	meta := e.create(t, verify.SchemeMeta, metaAppSecret, metaVerifyToken, nil)
	require.Equal(t, http.StatusForbidden, e.send(t, http.MethodGet, meta, "hub.mode=subscribe&hub.challenge=1&hub.verify_token=wrong-token", nil, nil).code)
	require.NoError(t, testutil.GatherAndCompare(e.metrics.Gatherer(), strings.NewReader(`
# HELP switchboard_ingest_deliveries_total Webhook deliveries answered, by the endpoint's signature scheme (unknown before the endpoint is found) and outcome: accepted, duplicate, handshake (a provider's URL check answered, not stored), or the HTTP status of a refusal (400, 401, 403, 404, 405, 408, 413, 429, 503).
# TYPE switchboard_ingest_deliveries_total counter
switchboard_ingest_deliveries_total{outcome="403",scheme="meta"} 1
switchboard_ingest_deliveries_total{outcome="429",scheme="x"} 1
switchboard_ingest_deliveries_total{outcome="handshake",scheme="x"} 1
`), "switchboard_ingest_deliveries_total"))
	e.requireNothingStored(t)
}
