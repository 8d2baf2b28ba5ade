package gateway_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/services/gateway"
)

// seen is what the fake ingest node received.
type seen struct {
	host, path string
	header     http.Header
	body       []byte
}

// fakeIngest records each request and answers 200 {"status":"accepted"}.
func fakeIngest(t *testing.T) (*url.URL, <-chan seen) {
	t.Helper()
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{host: r.Host, path: r.URL.Path, header: r.Header.Clone(), body: b}
		_, _ = io.WriteString(w, `{"status":"accepted"}`)
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	return u, got
}

func forwarder(t *testing.T, pick func() (*url.URL, bool), maxBody int64) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("POST /hooks/{slug}", gateway.ForwardHooks(gateway.HookForwarding{
		Pick: pick, MaxBodyBytes: maxBody, ResponseTimeout: 5 * time.Second, Log: zap.NewNop(),
	}))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs
}

func postHook(t *testing.T, target string, body io.Reader, header http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, target, body)
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

// TestHookForwardedUnchanged: the ingest node gets the path, the body bytes,
// every signature header and the Host the sender addressed as sent; the
// sender gets the ingest node's answer.
func TestHookForwardedUnchanged(t *testing.T) {
	t.Parallel()
	ingest, got := fakeIngest(t)
	hs := forwarder(t, func() (*url.URL, bool) { return ingest, true }, 1<<20)
	body := []byte(`{"id":"evt_1","amount":42}`)
	resp := postHook(t, hs.URL+"/hooks/shop-orders", bytes.NewReader(body), http.Header{
		"Webhook-Id": {"msg_1"}, "Webhook-Timestamp": {"1700000000"}, "Webhook-Signature": {"v1,abc= v1,def="},
		"Stripe-Signature": {"t=1,v1=ff"}, "Content-Type": {"application/json"},
	})
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.JSONEq(t, `{"status":"accepted"}`, string(answer))

	s := <-got
	require.Equal(t, "/hooks/shop-orders", s.path)
	require.Equal(t, body, s.body)
	require.Equal(t, strings.TrimPrefix(hs.URL, "http://"), s.host, "the Host the sender signed against, not the ingest node's")
	for _, h := range []string{"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature", "Stripe-Signature", "Content-Type"} {
		require.Equal(t, resp.Request.Header.Values(h), s.header.Values(h), h)
	}
}

// TestHookForwardedForIsTheGatewaysPeer: what a sender claims in
// X-Forwarded-For is dropped; the ingest node learns the peer the gateway
// saw.
func TestHookForwardedForIsTheGatewaysPeer(t *testing.T) {
	t.Parallel()
	ingest, got := fakeIngest(t)
	hs := forwarder(t, func() (*url.URL, bool) { return ingest, true }, 1<<20)
	resp := postHook(t, hs.URL+"/hooks/a", strings.NewReader("{}"), http.Header{"X-Forwarded-For": {"6.6.6.6"}})
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s := <-got
	require.Equal(t, []string{"127.0.0.1"}, s.header.Values("X-Forwarded-For"))
}

// TestHookBodyCapped: a body over the cap is answered 413, declared or
// streamed, and the ingest node never sees a declared one.
func TestHookBodyCapped(t *testing.T) {
	t.Parallel()
	ingest, got := fakeIngest(t)
	hs := forwarder(t, func() (*url.URL, bool) { return ingest, true }, 1024)
	declared := postHook(t, hs.URL+"/hooks/a", bytes.NewReader(make([]byte, 2048)), nil)
	defer declared.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, declared.StatusCode)
	require.Empty(t, got)

	// No Content-Length: the cap stops the stream part way.
	streamed := postHook(t, hs.URL+"/hooks/a", io.MultiReader(bytes.NewReader(make([]byte, 4096))), nil)
	defer streamed.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, streamed.StatusCode)
}

// TestHookWithoutIngestNodeIs503: no live ingest node, or one that does not
// answer, is 503 with Retry-After, so the sender retries.
func TestHookWithoutIngestNodeIs503(t *testing.T) {
	t.Parallel()
	none := forwarder(t, func() (*url.URL, bool) { return nil, false }, 1024)
	resp := postHook(t, none.URL+"/hooks/a", strings.NewReader("{}"), nil)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "5", resp.Header.Get("Retry-After"))
	require.JSONEq(t, `{"error":"no live node runs ingest; retry later"}`, string(b))

	lis, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gone := &url.URL{Scheme: "http", Host: lis.Addr().String()}
	require.NoError(t, lis.Close()) // a node the registry has not swept yet
	dead := forwarder(t, func() (*url.URL, bool) { return gone, true }, 1024)
	resp2 := postHook(t, dead.URL+"/hooks/a", strings.NewReader("{}"), nil)
	defer resp2.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp2.StatusCode)
	require.Equal(t, "5", resp2.Header.Get("Retry-After"))
}
