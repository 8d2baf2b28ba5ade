package metrics_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/metrics"
)

func TestQueueLabelsAreCapped(t *testing.T) {
	t.Parallel()
	r := metrics.New(metrics.Options{MaxQueues: 3})
	tenant := uuid.New()
	for i := range 5 {
		r.Queue.For(tenant, fmt.Sprintf("q%d", i)).Enqueued.Inc()
	}
	r.Queue.For(tenant, "q0").Enqueued.Inc() // known before the cap: still its own series
	n, err := testutil.GatherAndCount(r.Gatherer(), "switchboard_queue_todos_enqueued_total")
	require.NoError(t, err)
	require.Equal(t, 4, n, "three queues, then other")
	require.NoError(t, testutil.GatherAndCompare(r.Gatherer(), strings.NewReader(`
# HELP switchboard_queue_todos_enqueued_total Todos created (Enqueue, EnqueueBatch, webhooks and adapters), duplicates excluded.
# TYPE switchboard_queue_todos_enqueued_total counter
switchboard_queue_todos_enqueued_total{queue="other"} 2
switchboard_queue_todos_enqueued_total{queue="q0"} 2
switchboard_queue_todos_enqueued_total{queue="q1"} 1
switchboard_queue_todos_enqueued_total{queue="q2"} 1
`), "switchboard_queue_todos_enqueued_total"))
}

func TestTenantLabelOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	tenant := uuid.New()
	off := metrics.New(metrics.Options{})
	off.Queue.For(tenant, "jobs").Claimed.Inc()
	on := metrics.New(metrics.Options{TenantLabel: true})
	on.Queue.For(tenant, "jobs").Claimed.Inc()
	require.NotContains(t, scrape(t, off), tenant.String())
	require.Contains(t, scrape(t, on), `switchboard_queue_todos_claimed_total{queue="jobs",tenant="`+tenant.String()+`"} 1`)
}

func TestDepthsReplaceAndCap(t *testing.T) {
	t.Parallel()
	r := metrics.New(metrics.Options{MaxQueues: 2})
	a, b := uuid.New(), uuid.New()
	r.Queue.SetDepths([]metrics.Depth{
		{Tenant: a, Queue: "jobs", State: "pending", Count: 5, OldestPendingSeconds: 7},
		{Tenant: b, Queue: "jobs", State: "pending", Count: 2, OldestPendingSeconds: 9}, // same label without tenants
		{Tenant: a, Queue: "mail", State: "running", Count: 1},
		{Tenant: a, Queue: "late", State: "pending", Count: 3, OldestPendingSeconds: 1},
	})
	out := scrape(t, r)
	require.Contains(t, out, `switchboard_queue_todos{queue="jobs",state="pending"} 7`)
	require.Contains(t, out, `switchboard_queue_oldest_pending_age_seconds{queue="jobs"} 9`, "the oldest of the tenants")
	require.Contains(t, out, `switchboard_queue_todos{queue="other",state="pending"} 3`, "past the cap")

	r.Queue.SetDepths([]metrics.Depth{{Tenant: a, Queue: "mail", State: "pending", Count: 1}})
	out = scrape(t, r)
	require.NotContains(t, out, `queue="jobs"`, "a queue that emptied leaves the gauges")
	require.Contains(t, out, `switchboard_queue_todos{queue="mail",state="pending"} 1`)
}

func TestHTTPMiddlewareLabelsByPattern(t *testing.T) {
	t.Parallel()
	r := metrics.New(metrics.Options{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hooks/{slug}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	srv := httptest.NewServer(r.HTTP.Middleware(mux))
	t.Cleanup(srv.Close)
	for _, path := range []string{"/hooks/a", "/hooks/b-secret-slug"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+path, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/nowhere", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()

	out := scrape(t, r)
	require.Contains(t, out, `switchboard_http_requests_total{code="202",method="POST",route="POST /hooks/{slug}"} 2`)
	require.Contains(t, out, `switchboard_http_requests_total{code="404",method="GET",route="unmatched"} 1`)
	require.NotContains(t, out, "b-secret-slug", "never the raw path")
}

func TestHandlerServesGoAndProcessCollectors(t *testing.T) {
	t.Parallel()
	out := scrape(t, metrics.New(metrics.Options{}))
	require.Contains(t, out, "go_goroutines ")
	require.Contains(t, out, "process_start_time_seconds ")
}

func scrape(t *testing.T, r *metrics.Registry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	b, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	return string(b)
}

// A 413 closes the connection as http.MaxBytesReader would through an
// unwrapped writer: the rest of an over-long body is not read first.
func TestHTTPMiddlewareClosesAfterTooLarge(t *testing.T) {
	t.Parallel()
	r := metrics.New(metrics.Options{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /in", func(w http.ResponseWriter, req *http.Request) {
		if _, err := io.ReadAll(http.MaxBytesReader(w, req.Body, 8)); err != nil {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
		}
	})
	srv := httptest.NewServer(r.HTTP.Middleware(mux))
	t.Cleanup(srv.Close)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/in", strings.NewReader(strings.Repeat("x", 1<<20)))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	require.True(t, resp.Close, "Connection: close")
}
