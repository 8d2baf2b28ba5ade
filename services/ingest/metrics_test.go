//go:build integration

package ingest_test

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/metrics"
	"github.com/switchboard/switchboard/services/ingest"
)

// Every answered webhook is counted once, by its endpoint's scheme
// ("unknown" before the endpoint is found) and outcome.
func TestHookDeliveriesAreCountedByOutcome(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := metrics.New(metrics.Options{})
	srv := ingest.New(zap.NewNop(), e.pool, ingest.Options{SealingKeys: e.keys, Todos: e.queue.Todos(), Metrics: r})
	mux := http.NewServeMux()
	mux.Handle(ingest.HookPattern, srv.HookHandler())
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	e.url = hs.URL

	slug := e.endpoint(t, "standard_webhooks", []byte(whsec), "")
	body := []byte(`{"n":1}`)
	good := standardHeaders(t, "msg_m", time.Now(), body)
	bad := standardHeaders(t, "msg_m", time.Now(), body)
	bad.Set("Webhook-Signature", "v1,"+base64.StdEncoding.EncodeToString(make([]byte, 32)))
	for _, c := range []struct {
		slug   string
		body   []byte
		header http.Header
		want   int
	}{
		{slug, body, good, http.StatusOK},
		{slug, body, good, http.StatusOK}, // the same delivery again: a duplicate
		{slug, body, bad, http.StatusUnauthorized},
		{slug, bytes.Repeat([]byte("a"), 2048), good, http.StatusRequestEntityTooLarge},
		{"nosuchendpoint000000000", body, good, http.StatusNotFound},
	} {
		code, resp := e.post(t, c.slug, c.body, c.header)
		require.Equal(t, c.want, code, resp)
	}
	require.NoError(t, testutil.GatherAndCompare(r.Gatherer(), strings.NewReader(`
# HELP switchboard_ingest_deliveries_total Webhook deliveries answered, by the endpoint's signature scheme (unknown before the endpoint is found) and outcome: accepted, duplicate, handshake (a provider's URL check answered, not stored), or the HTTP status of a refusal (400, 401, 403, 404, 405, 408, 413, 429, 503).
# TYPE switchboard_ingest_deliveries_total counter
switchboard_ingest_deliveries_total{outcome="401",scheme="standard_webhooks"} 1
switchboard_ingest_deliveries_total{outcome="404",scheme="unknown"} 1
switchboard_ingest_deliveries_total{outcome="413",scheme="standard_webhooks"} 1
switchboard_ingest_deliveries_total{outcome="accepted",scheme="standard_webhooks"} 1
switchboard_ingest_deliveries_total{outcome="duplicate",scheme="standard_webhooks"} 1
`), "switchboard_ingest_deliveries_total"))
}
