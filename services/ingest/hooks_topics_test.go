//go:build integration

package ingest_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	"github.com/switchboard/switchboard/services/ingest"
)

func hmacHex(secret []byte, parts ...string) string {
	m := hmac.New(sha256.New, secret)
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return hex.EncodeToString(m.Sum(nil))
}

func stripeHeaders(secret []byte, body []byte) http.Header {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	return http.Header{"Stripe-Signature": {"t=" + ts + ",v1=" + hmacHex(secret, ts, ".", string(body))}}
}

func slackHeaders(secret []byte, body []byte) http.Header {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	return http.Header{"X-Slack-Request-Timestamp": {ts}, "X-Slack-Signature": {"v0=" + hmacHex(secret, "v0:", ts, ":", string(body))}}
}

// eventOf is the topic, delivery id and todo kind of the event stored from
// the endpoint of slug (the test stores one per endpoint).
func (e *env) eventOf(t *testing.T, slug string) (id int64, topic, deliveryID, kind string) {
	t.Helper()
	require.NoError(t, e.pool.QueryRow(t.Context(), `
		SELECT ev.id, ev.topic, coalesce(ev.delivery_id, ''), t.kind
		FROM events AS ev JOIN endpoints AS ep ON ep.id = ev.endpoint_id JOIN todos AS t ON t.event_id = ev.id
		WHERE ep.slug = $1`, slug).Scan(&id, &topic, &deliveryID, &kind))
	return id, topic, deliveryID, kind
}

// TestHookTopicPerScheme: each scheme's event type, through the edge,
// becomes the event's topic (ListEvents finds it by topic) and its todo's
// kind; a generic endpoint names a header or a JSON pointer; without a
// topic the kind is "webhook".
func TestHookTopicPerScheme(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := ingest.New(zap.NewNop(), e.pool, ingest.Options{SealingKeys: e.keys})
	secret := []byte("a-shared-secret-of-some-length")
	slackForm := []byte("payload=" + url.QueryEscape(`{"type":"block_actions","actions":[]}`))
	cases := []struct {
		name, scheme, extra string
		body                []byte
		sign                func([]byte) http.Header
		topic               string
	}{
		{"github", "github", "", []byte(`{"action":"opened"}`), func(b []byte) http.Header {
			return http.Header{"X-Hub-Signature-256": {"sha256=" + hmacHex(secret, string(b))}, "X-Github-Event": {"pull_request"}}
		}, "pull_request"},
		{"stripe", "stripe", "", []byte(`{"id":"evt_topic","type":"invoice.paid"}`), func(b []byte) http.Header { return stripeHeaders(secret, b) }, "invoice.paid"},
		{"shopify", "shopify", "", []byte(`{"id":1}`), func(b []byte) http.Header {
			m := hmac.New(sha256.New, secret)
			m.Write(b)
			return http.Header{"X-Shopify-Hmac-Sha256": {base64.StdEncoding.EncodeToString(m.Sum(nil))}, "X-Shopify-Topic": {"orders/create"}}
		}, "orders/create"},
		{"slack event", "slack", "", []byte(`{"type":"event_callback","event_id":"Ev1","event":{"type":"app_mention"}}`),
			func(b []byte) http.Header { return slackHeaders(secret, b) }, "app_mention"},
		{"slack interactive", "slack", "", slackForm, func(b []byte) http.Header { return slackHeaders(secret, b) }, "block_actions"},
		{"standard webhooks", "standard_webhooks", "", []byte(`{"type":"user.created"}`), func(b []byte) http.Header {
			return standardHeaders(t, "msg_topic", time.Now(), b)
		}, "user.created"},
		{"hmac pointer", "hmac", "signature_header = 'X-Sig', topic_pointer = '/event/type'", []byte(`{"event":{"type":"build.done"}}`),
			func(b []byte) http.Header { return http.Header{"X-Sig": {hmacHex(secret, string(b))}} }, "build.done"},
		{"none header", "none", "topic_header = 'X-Event-Name'", []byte(`{}`), func([]byte) http.Header {
			return http.Header{"X-Event-Name": {"ping.sent"}}
		}, "ping.sent"},
		{"stripe overridden", "stripe", "topic_pointer = '/data/object/object'", []byte(`{"id":"evt_o","type":"t","data":{"object":{"object":"charge"}}}`),
			func(b []byte) http.Header { return stripeHeaders(secret, b) }, "charge"},
		{"no topic", "hmac", "signature_header = 'X-Sig'", []byte(`not json`),
			func(b []byte) http.Header { return http.Header{"X-Sig": {hmacHex(secret, string(b))}} }, ""},
	}
	for _, c := range cases {
		var sec []byte
		if c.scheme == "standard_webhooks" {
			sec = []byte(whsec)
		} else if c.scheme != "none" {
			sec = secret
		}
		slug := e.endpoint(t, c.scheme, sec, c.extra)
		code, resp := e.post(t, slug, c.body, c.sign(c.body))
		require.Equal(t, http.StatusOK, code, "%s: %s", c.name, resp)
		id, topic, _, kind := e.eventOf(t, slug)
		assert.Equal(t, c.topic, topic, c.name)
		want := c.topic
		if want == "" {
			want = "webhook"
		}
		assert.Equal(t, want, kind, c.name)
		if c.topic != "" {
			list, err := srv.ListEvents(asHuman(t, e.human, nil), &ingestv1.ListEventsRequest{Topic: c.topic})
			require.NoError(t, err)
			require.Len(t, list.GetEvents(), 1, c.name)
			assert.Equal(t, id, list.GetEvents()[0].GetId(), c.name)
		}
	}
}

// TestHookStripeRedeliveryIsOneEvent: Stripe's event id is inside the
// signed body, so a redelivery of evt_… whose body changed
// (pending_webhooks 1 → 0) is a duplicate; the endpoint's delivery-id
// header cannot stand in for it: the signed id wins, so a forged header
// neither merges two events nor splits one.
func TestHookStripeRedeliveryIsOneEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	secret := []byte("whsec_stripe_test_secret")
	slug := e.endpoint(t, "stripe", secret, "delivery_id_header = 'X-Request-Id'")
	first := []byte(`{"id":"evt_1","type":"invoice.paid","pending_webhooks":1}`)
	h := stripeHeaders(secret, first)
	h.Set("X-Request-Id", "evt_2")
	code, resp := e.post(t, slug, first, h)
	require.Equal(t, http.StatusOK, code, resp)
	require.Contains(t, resp, `"accepted"`)

	again := []byte(`{"id":"evt_1","type":"invoice.paid","pending_webhooks":0}`)
	h = stripeHeaders(secret, again)
	h.Set("X-Request-Id", "fresh-forged-id")
	code, resp = e.post(t, slug, again, h)
	require.Equal(t, http.StatusOK, code, resp)
	require.Contains(t, resp, `"duplicate"`)

	other := []byte(`{"id":"evt_2","type":"invoice.paid","pending_webhooks":1}`)
	h = stripeHeaders(secret, other)
	h.Set("X-Request-Id", "evt_1")
	code, resp = e.post(t, slug, other, h)
	require.Equal(t, http.StatusOK, code, resp)
	require.Contains(t, resp, `"accepted"`, "another signed id is another event, whatever the header says")

	require.Equal(t, 2, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1 AND delivery_id IN ('evt_1', 'evt_2')`))
	require.Equal(t, 2, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1`))
	var stored []byte
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT payload FROM events WHERE human_id = $1 AND delivery_id = 'evt_1'`, e.human).Scan(&stored))
	require.Equal(t, first, stored, "the first delivery is the one kept")
}

// TestHookSlackEventIDIsOneEvent: Slack's event_id (event_callback) is in
// the signed body: a retry whose body differs is a duplicate.
func TestHookSlackEventIDIsOneEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	secret := []byte("slack-signing-secret-0123")
	slug := e.endpoint(t, "slack", secret, "")
	for i, body := range []string{
		`{"type":"event_callback","event_id":"Ev42","event_time":1,"event":{"type":"message"}}`,
		`{"type":"event_callback","event_id":"Ev42","event_time":1,"event":{"type":"message"},"is_ext_shared_channel":false}`,
	} {
		code, resp := e.post(t, slug, []byte(body), slackHeaders(secret, []byte(body)))
		require.Equal(t, http.StatusOK, code, resp)
		if i == 1 {
			require.Contains(t, resp, `"duplicate"`)
		}
	}
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1 AND delivery_id = 'Ev42'`))
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1 AND kind = 'message'`))
}

// TestHookBodyDedupIsPerEndpoint: with body dedup off, two distinct
// deliveries with identical bytes are both stored; on, the second is a
// duplicate within the window and stored again once the first is older.
func TestHookBodyDedupIsPerEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := []byte(`{"same":"bytes"}`)
	off := e.endpoint(t, "none", nil, "body_dedup_window_seconds = 0")
	for range 2 {
		code, resp := e.post(t, off, body, nil)
		require.Equal(t, http.StatusOK, code, resp)
		require.Contains(t, resp, `"accepted"`)
	}
	require.Equal(t, 2, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1 AND body_sha256 IS NULL`))
	require.Equal(t, 2, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1`))

	on := e.endpoint(t, "none", nil, "body_dedup_window_seconds = 3600")
	code, resp := e.post(t, on, body, nil)
	require.Equal(t, http.StatusOK, code, resp)
	require.Contains(t, resp, `"accepted"`)
	code, resp = e.post(t, on, body, nil)
	require.Equal(t, http.StatusOK, code, resp)
	require.Contains(t, resp, `"duplicate"`)
	_, err := e.pool.Exec(t.Context(), `UPDATE events SET received_at = now() - interval '2 hours' WHERE body_sha256 IS NOT NULL AND human_id = $1`, e.human)
	require.NoError(t, err)
	code, resp = e.post(t, on, body, nil)
	require.Equal(t, http.StatusOK, code, resp)
	require.Contains(t, resp, `"accepted"`, "past the window the same bytes are a new event")
	require.Equal(t, 4, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`))
	require.Equal(t, 4, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1`))
}

// TestHookTopicBounds: a topic with a NUL (the signature passed) is
// dropped, not refused; a long one is cut to 255 bytes at a rune boundary.
func TestHookTopicBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nul := e.endpoint(t, "standard_webhooks", []byte(whsec), "")
	body := []byte(`{"type":"bad\u0000topic"}`)
	code, resp := e.post(t, nul, body, standardHeaders(t, "msg_nul", time.Now(), body))
	require.Equal(t, http.StatusOK, code, resp)
	_, topic, _, kind := e.eventOf(t, nul)
	require.Empty(t, topic)
	require.Equal(t, "webhook", kind)

	long := e.endpoint(t, "standard_webhooks", []byte(whsec), "max_body_bytes = 4096")
	body = []byte(`{"type":"` + strings.Repeat("é", 200) + `"}`)
	code, resp = e.post(t, long, body, standardHeaders(t, "msg_long", time.Now(), body))
	require.Equal(t, http.StatusOK, code, resp)
	_, topic, _, kind = e.eventOf(t, long)
	require.Equal(t, strings.Repeat("é", 127), topic, "254 bytes: the 128th é would split at byte 255")
	require.Equal(t, topic, kind)
}

// TestHookMixedTopicsShareTheGroupCommit: concurrent deliveries to one
// endpoint with different topics (the group commit's path: no body dedup)
// each get a todo of their own topic's kind.
func TestHookMixedTopicsShareTheGroupCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	slug := e.endpoint(t, "standard_webhooks", []byte(whsec), "")
	const n = 30
	var wg sync.WaitGroup
	codes := make(chan int, n)
	for i := range n {
		body := []byte(`{"type":"topic.` + strconv.Itoa(i%3) + `","n":` + strconv.Itoa(i) + `}`)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+"/hooks/"+slug, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header = standardHeaders(t, "msg_mix_"+strconv.Itoa(i), time.Now(), body)
		wg.Go(func() {
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				codes <- 0
				return
			}
			_ = resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		require.Equal(t, http.StatusOK, c)
	}
	require.Equal(t, n, e.count(t, `SELECT count(*) FROM todos AS t JOIN events AS ev ON ev.id = t.event_id WHERE t.human_id = $1 AND t.kind = ev.topic`))
	require.Equal(t, 3, e.count(t, `SELECT count(DISTINCT kind) FROM todos WHERE human_id = $1`))
}
