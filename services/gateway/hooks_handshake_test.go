package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/services/gateway"
)

// TestHookHandshakeGETForwardedWithItsQuery: a provider's handshake (Meta's
// hub.challenge, X's crc_token) is a GET whose challenge is in the query:
// the ingest node gets the method, path and query as sent (percent-encoding
// included), and the sender gets the ingest node's answer as it gave it.
func TestHookHandshakeGETForwardedWithItsQuery(t *testing.T) {
	t.Parallel()
	type got struct{ method, path, rawQuery string }
	seen := make(chan got, 1)
	ingest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- got{r.Method, r.URL.Path, r.URL.RawQuery}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, r.URL.Query().Get("hub.challenge"))
	}))
	t.Cleanup(ingest.Close)
	target, err := url.Parse(ingest.URL)
	require.NoError(t, err)
	forward := gateway.ForwardHooks(gateway.HookForwarding{
		Pick: func() (*url.URL, bool) { return target, true }, MaxBodyBytes: 1 << 20,
		ResponseTimeout: 5 * time.Second, Log: zap.NewNop(),
	})
	mux := http.NewServeMux()
	mux.Handle("POST /hooks/{slug}", forward)
	mux.Handle("GET /hooks/{slug}", forward)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)

	const query = "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=meatyhamhock%2B1"
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, hs.URL+"/hooks/meta-app?"+query, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "1158201444", string(answer))
	require.Equal(t, got{http.MethodGet, "/hooks/meta-app", query}, <-seen)
}
