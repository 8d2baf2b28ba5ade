//go:build integration

package node_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/services/node"
)

// scrapeAt GETs /metrics at addr with token ("" for none) and returns the
// status and body.
func scrapeAt(t *testing.T, addr, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+node.MetricsPath, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// families scrapes a node as its administrator and parses the exposition
// format.
func families(t *testing.T, b *testBundle) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := scrapeAt(t, b.node.MetricsAddr(), b.token)
	require.Equal(t, http.StatusOK, code, body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	return fams
}

// value is the counter, gauge, or histogram sample count of the series of
// name whose labels include want (0 when there is none).
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f, ok := fams[name]
	if !ok {
		return 0
	}
	total := 0.0
	for _, m := range f.GetMetric() {
		if !hasLabels(m, want) {
			continue
		}
		switch {
		case m.GetCounter() != nil:
			total += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			total += m.GetGauge().GetValue()
		case m.GetHistogram() != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return total
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			found++
		}
	}
	return found == len(want)
}

// agentConn is a connection that calls as tokens[caller].
func agentConn(t *testing.T, b *testBundle, token string) queuev1.QueueServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(b.node.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(auth.Bearer{Token: token, AllowInsecure: true}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return queuev1.NewQueueServiceClient(conn)
}

// One enqueue → claim → complete moves the queue's counters by exactly one
// each, records one wait and one run, and nothing else.
func TestMetricsCountOneTodoJourney(t *testing.T) {
	t.Parallel()
	key := []byte("metrics journey test key, 32 bytes or more")
	b := setupWith(t, "all", func(cfg *config.Config) { cfg.Auth.SecretKey = key })
	tokens := mintFixtures(t, b.db, auth.NewHasher(key))
	jobs := map[string]string{"queue": "jobs"}
	names := []string{
		"switchboard_queue_todos_enqueued_total", "switchboard_queue_todos_claimed_total",
		"switchboard_queue_todos_completed_total", "switchboard_queue_todos_failed_total",
		"switchboard_queue_todos_dead_total", "switchboard_queue_todos_lease_expired_total",
		"switchboard_queue_todo_wait_seconds", "switchboard_queue_todo_run_seconds",
	}
	read := func() map[string]float64 {
		fams := families(t, b)
		out := map[string]float64{}
		for _, n := range names {
			out[n] = value(fams, n, jobs)
		}
		return out
	}
	before := read()

	ctx := t.Context()
	_, err := agentConn(t, b, tokens[publisher]).Enqueue(ctx, &queuev1.EnqueueRequest{Queue: "jobs", Kind: "metrics"})
	require.NoError(t, err)
	worker := agentConn(t, b, tokens[agent])
	claimed, err := worker.Claim(ctx, &queuev1.ClaimRequest{Queue: "jobs", WorkerId: "w1", MaxTodos: 10})
	require.NoError(t, err)
	require.Len(t, claimed.GetTodos(), 1)
	td := claimed.GetTodos()[0]
	_, err = worker.Complete(ctx, &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()})
	require.NoError(t, err)
	// A retried ack of the same completion changes nothing and counts nothing.
	again, err := worker.Complete(ctx, &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()})
	require.NoError(t, err)
	require.True(t, again.GetAlready())

	var after map[string]float64
	require.Eventually(t, func() bool {
		after = read()
		return after["switchboard_queue_todos_completed_total"] >= before["switchboard_queue_todos_completed_total"]+1
	}, 10*time.Second, 20*time.Millisecond)
	want := map[string]float64{
		"switchboard_queue_todos_enqueued_total": 1, "switchboard_queue_todos_claimed_total": 1,
		"switchboard_queue_todos_completed_total": 1, "switchboard_queue_todos_failed_total": 0,
		"switchboard_queue_todos_dead_total": 0, "switchboard_queue_todos_lease_expired_total": 0,
		"switchboard_queue_todo_wait_seconds": 1, "switchboard_queue_todo_run_seconds": 1,
	}
	for _, n := range names {
		require.InDelta(t, want[n], after[n]-before[n], 0, n)
	}

	fams := families(t, b)
	// The edges: the RPCs by method and code, the scrapes by route.
	require.InDelta(t, 1, value(fams, "grpc_server_handled_total",
		map[string]string{"grpc_method": "Enqueue", "grpc_code": "OK", "grpc_service": "switchboard.queue.v1.QueueService"}), 0)
	require.Positive(t, value(fams, "switchboard_http_requests_total", map[string]string{"route": "GET /metrics", "code": "200"}))
	require.Positive(t, value(fams, "switchboard_pgxpool_max_connections", map[string]string{"pool": "main"}))
	require.Positive(t, value(fams, "switchboard_pgxpool_max_connections", map[string]string{"pool": "hot"}))
	require.Eventually(t, func() bool { return value(families(t, b), "switchboard_cluster_nodes", nil) == 1 },
		10*time.Second, 20*time.Millisecond, "the cluster as this node sees it: itself")
}

// On the HTTP listener /metrics needs an administrator: the figures cover
// every tenant.
func TestMetricsOnTheHTTPListenerNeedAnAdministrator(t *testing.T) {
	t.Parallel()
	key := []byte("metrics auth test key, 32 bytes or more!")
	b := setupWith(t, "all", func(cfg *config.Config) { cfg.Auth.SecretKey = key })
	tokens := mintFixtures(t, b.db, auth.NewHasher(key))
	code, _ := scrapeAt(t, b.node.HTTPAddr(), "")
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = scrapeAt(t, b.node.HTTPAddr(), "sbt_not-a-token")
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = scrapeAt(t, b.node.HTTPAddr(), tokens[tenantAdmin])
	require.Equal(t, http.StatusForbidden, code, "a tenant's admin sees only its tenant; metrics are the node's")
	code, body := scrapeAt(t, b.node.HTTPAddr(), tokens[administrator])
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "# TYPE switchboard_cluster_sweeps_total counter")
	require.Contains(t, body, "go_goroutines ")
	require.Contains(t, body, "process_resident_memory_bytes ")
}

// With SWITCHBOARD_METRICS_ADDR /metrics is served there, open, and not on
// the HTTP listener.
func TestMetricsOnTheirOwnListener(t *testing.T) {
	t.Parallel()
	b := setupWith(t, "all", func(cfg *config.Config) { cfg.Metrics.Addr = "127.0.0.1:0" })
	require.NotEqual(t, b.node.HTTPAddr(), b.node.MetricsAddr())
	code, body := scrapeAt(t, b.node.MetricsAddr(), "")
	require.Equal(t, http.StatusOK, code, "open on its own listener")
	require.Contains(t, body, "# TYPE switchboard_cluster_sweeps_total counter")
	code, body = scrapeAt(t, b.node.HTTPAddr(), b.token)
	require.NotEqual(t, http.StatusOK, code, "not on the HTTP listener, even for an administrator")
	require.NotContains(t, body, "switchboard_cluster_sweeps_total")
}
