package verify_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/verify"
)

// Request shapes from each provider's documentation; the signatures are
// computed here with the documented algorithm (mac, independent of the
// package), since the docs publish no secret with their examples.
const (
	// Zoom, "Using webhooks" (developers.zoom.us/docs/api/webhooks):
	// x-zm-signature = "v0=" + hex HMAC-SHA256(secret token,
	// "v0:" + x-zm-request-timestamp + ":" + body).
	zoomSecret     = "Wq8GqLx2Ri6zlrBY1yk9Nw"
	zoomEvent      = `{"event":"meeting.started","event_ts":1626230691572,"payload":{"account_id":"AAAAAABBBB","object":{"id":"1234567890","uuid":"czLF6FFFoQOKgAB99DlDb9g==","host_id":"x1yCzABCDEfg23HiJKl4mN","topic":"My Meeting","type":8,"start_time":"2021-07-13T21:44:51Z","timezone":"America/Los_Angeles","duration":60}}}`
	zoomValidation = `{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}`
	// Meta, "Webhooks: Getting started" (developers.facebook.com/docs/graph-api/webhooks/getting-started):
	// X-Hub-Signature-256 = "sha256=" + hex HMAC-SHA256(app secret, body).
	metaSecret      = "6f1a0c2e9b8d7c3e5a4f2b1d0e9c8a7b"
	metaVerifyToken = "meatyhamhock"
	metaEvent       = `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},"messages":[{"from":"16505551234","id":"wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=","timestamp":"1749416383","type":"text","text":{"body":"Does it come in another color?"}}]},"field":"messages"}]}]}`
	// X, "Securing webhooks" (Account Activity API): response_token =
	// "sha256=" + base64 HMAC-SHA256(consumer secret, crc_token); deliveries
	// carry x-twitter-webhooks-signature = "sha256=" + base64 HMAC of the body.
	xSecret = "s3cr3tConsumerKeySecretFromTheXDeveloperPortal00"
	xEvent  = `{"for_user_id":"2244994945","tweet_create_events":[{"id_str":"1301912281000000000","text":"@XDevelopers hello","user":{"id_str":"6253282","screen_name":"API"}}]}`
	// Microsoft Graph, "Set up notifications for changes in resource data"
	// (learn.microsoft.com/graph/change-notifications-delivery-webhooks).
	graphClientState = "secretClientValue"
	graphChange      = `{"value":[{"id":"lsgTZMr9KwAAA","subscriptionId":"c9bc8f63-3b7b-4b30-8b74-2d7f1a4a7e09","subscriptionExpirationDateTime":"2016-03-19T22:11:09.952Z","clientState":"secretClientValue","changeType":"created","resource":"users/45e4ae3e-4d2d-4a6a-b0a7-2b12a7d3c3a3/messages/AAMkADI","tenantId":"84bd8158-6d4d-4958-8b9f-9d6445542f95","resourceData":{"@odata.type":"#Microsoft.Graph.Message","@odata.id":"Users/45e4ae3e/Messages/AAMkADI","@odata.etag":"W/\"CQAAABYAAADkrWGo7bouTKlsgTZMr9KwAAAUWRHf\"","id":"AAMkADI"}}]}`
	graphLifecycle   = `{"value":[{"lifecycleEvent":"reauthorizationRequired","subscriptionId":"c9bc8f63-3b7b-4b30-8b74-2d7f1a4a7e09","subscriptionExpirationDateTime":"2019-09-18T00:00:00.0000000Z","clientState":"secretClientValue","tenantId":"84bd8158-6d4d-4958-8b9f-9d6445542f95"}]}`
)

var zoomNow = time.Unix(1654503849, 0)

func zoomHeaders(secret, ts, body string) http.Header {
	return header("X-Zm-Request-Timestamp", ts, "X-Zm-Signature", "v0="+macSHA256Hex([]byte(secret), "v0:"+ts+":"+body))
}

func TestZoom(t *testing.T) {
	t.Parallel()
	ts := strconv.FormatInt(zoomNow.Unix(), 10)
	valid := zoomHeaders(zoomSecret, ts, zoomEvent)
	tests := []struct {
		name    string
		secrets []string
		header  http.Header
		body    string
		now     time.Time
		ok      bool
	}{
		{name: "documented event", ok: true},
		{name: "rotation: second secret matches", ok: true, secrets: []string{"previous-secret-token", zoomSecret}},
		{name: "flipped bit in body", body: string(flipBody(zoomEvent))},
		{name: "wrong secret", secrets: []string{"another-secret-token"}},
		{name: "stale timestamp", now: zoomNow.Add(5*time.Minute + time.Second)},
		{name: "timestamp in the future", now: zoomNow.Add(-5*time.Minute - time.Second)},
		{name: "milliseconds are not seconds", header: zoomHeaders(zoomSecret, ts+"000", zoomEvent)},
		{name: "unknown version", header: header("X-Zm-Request-Timestamp", ts, "X-Zm-Signature", "v1="+valid.Get("X-Zm-Signature")[3:])},
		{name: "missing signature", header: header("X-Zm-Request-Timestamp", ts)},
		{name: "missing timestamp", header: header("X-Zm-Signature", valid.Get("X-Zm-Signature"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.secrets == nil {
				tc.secrets = []string{zoomSecret}
			}
			if tc.header == nil {
				tc.header = valid
			}
			if tc.body == "" {
				tc.body = zoomEvent
			}
			if tc.now.IsZero() {
				tc.now = zoomNow
			}
			v := mustNew(t, verify.Config{Scheme: verify.SchemeZoom, Secrets: secrets(tc.secrets...)})
			res, err := v.Verify(verify.Request{Body: []byte(tc.body), Header: tc.header, Now: tc.now})
			if !tc.ok {
				requireUnverified(t, err, zoomSecret)
				return
			}
			require.NoError(t, err)
			require.Equal(t, verify.Result{Scheme: verify.SchemeZoom, Timestamp: zoomNow}, res)
		})
	}
}

func TestMeta(t *testing.T) {
	t.Parallel()
	v := mustNew(t, metaConfig(metaSecret))
	sig := "sha256=" + macSHA256Hex([]byte(metaSecret), metaEvent)
	res, err := v.Verify(verify.Request{Body: []byte(metaEvent), Header: header("X-Hub-Signature-256", sig)})
	require.NoError(t, err)
	require.Equal(t, verify.Result{Scheme: verify.SchemeMeta}, res)
	for name, h := range map[string]http.Header{
		"wrong secret": header("X-Hub-Signature-256", "sha256="+macSHA256Hex([]byte("not the app secret"), metaEvent)),
		"no prefix":    header("X-Hub-Signature-256", sig[len("sha256="):]),
		"sha1 only":    header("X-Hub-Signature", "sha1=0123456789abcdef0123456789abcdef01234567"),
		"repeated":     header("X-Hub-Signature-256", sig, "X-Hub-Signature-256", sig),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := v.Verify(verify.Request{Body: []byte(metaEvent), Header: h})
			requireUnverified(t, err, metaSecret)
		})
	}
	_, err = v.Verify(verify.Request{Body: flipBody(metaEvent), Header: header("X-Hub-Signature-256", sig)})
	requireUnverified(t, err, metaSecret)
}

func metaConfig(secret string) verify.Config {
	return verify.Config{Scheme: verify.SchemeMeta, Secrets: secrets(secret), VerifyTokenHash: sha256Sum(metaVerifyToken)}
}

func TestX(t *testing.T) {
	t.Parallel()
	v := mustNew(t, verify.Config{Scheme: verify.SchemeX, Secrets: secrets(xSecret)})
	sig := "sha256=" + macSHA256B64([]byte(xSecret), xEvent)
	res, err := v.Verify(verify.Request{Body: []byte(xEvent), Header: header("X-Twitter-Webhooks-Signature", sig)})
	require.NoError(t, err)
	require.Equal(t, verify.Result{Scheme: verify.SchemeX}, res)
	for _, h := range []http.Header{
		header("X-Twitter-Webhooks-Signature", "sha256="+macSHA256B64([]byte("another consumer secret"), xEvent)),
		header("X-Twitter-Webhooks-Signature", sig[len("sha256="):]),
		header("X-Twitter-Webhooks-Signature", "sha256="+macSHA256Hex([]byte(xSecret), xEvent)),
		header("X-Twitter-Webhooks-Signature", "sha256="+flipB64(t, sig[len("sha256="):])),
		{},
	} {
		_, err := v.Verify(verify.Request{Body: []byte(xEvent), Header: h})
		requireUnverified(t, err, xSecret)
	}
}

func TestMSGraph(t *testing.T) {
	t.Parallel()
	v := mustNew(t, verify.Config{Scheme: verify.SchemeMSGraph, Secrets: secrets("previous-client-state", graphClientState)})
	for _, body := range []string{graphChange, graphLifecycle} {
		res, err := v.Verify(verify.Request{Body: []byte(body)})
		require.NoError(t, err)
		require.Equal(t, verify.Result{Scheme: verify.SchemeMSGraph}, res)
	}
	for name, body := range map[string]string{
		"wrong clientState":       `{"value":[{"clientState":"guessedClientValue","changeType":"created"}]}`,
		"one item without it":     `{"value":[{"clientState":"secretClientValue"},{"changeType":"updated"}]}`,
		"one item with another":   `{"value":[{"clientState":"secretClientValue"},{"clientState":"secretClientValuf"}]}`,
		"no notifications":        `{"value":[]}`,
		"not a batch":             `{"clientState":"secretClientValue"}`,
		"not JSON":                `clientState=secretClientValue`,
		"clientState not text":    `{"value":[{"clientState":1}]}`,
		"prefix of the secret":    `{"value":[{"clientState":"secretClient"}]}`,
		"secret with extra bytes": `{"value":[{"clientState":"secretClientValue "}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := v.Verify(verify.Request{Body: []byte(body)})
			requireUnverified(t, err, graphClientState)
		})
	}
}

func TestNewRejectsBadHandshakeConfig(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]verify.Config{
		"zoom without secrets":        {Scheme: verify.SchemeZoom},
		"meta without verify token":   {Scheme: verify.SchemeMeta, Secrets: secrets(metaSecret)},
		"meta verify token not a sum": {Scheme: verify.SchemeMeta, Secrets: secrets(metaSecret), VerifyTokenHash: []byte(metaVerifyToken)},
		"meta without secrets":        {Scheme: verify.SchemeMeta, VerifyTokenHash: sha256Sum(metaVerifyToken)},
		"verify token for github":     {Scheme: verify.SchemeGitHub, Secrets: secrets("s"), VerifyTokenHash: sha256Sum(metaVerifyToken)},
		"x empty secret":              {Scheme: verify.SchemeX, Secrets: [][]byte{{}}},
		"msgraph with secret hashes":  {Scheme: verify.SchemeMSGraph, Secrets: secrets("s"), SecretHashes: [][]byte{sha256Sum("s")}},
	} {
		v, err := verify.New(cfg)
		require.Error(t, err, name)
		require.Nil(t, v, name)
	}
}

func query(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Add(kv[i], kv[i+1])
	}
	return q
}
