//go:build integration

package node_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/config"
)

// observabilityDir is deploy/observability, from this package's folder. The
// rules' own check (promtool) is an e2e test: services/internal/e2e/observability.
var observabilityDir = filepath.Join("..", "..", "deploy", "observability")

// Every metric that an alert or a dashboard panel reads exists on a live
// node once it has done the work they describe: an enqueue, claim and
// complete, a webhook, a pull adapter's message.
func TestDashboardAndAlertsUseLiveMetrics(t *testing.T) {
	t.Parallel()
	key := []byte("observability test key, 32 bytes or more")
	b := setupWith(t, "all", func(cfg *config.Config) {
		cfg.Auth.SecretKey = key
		cfg.Ingest.AdapterAllow = []config.AdapterAllowEntry{{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Port: 6379}}
	})
	tokens := mintFixtures(t, b.db, auth.NewHasher(key))
	ctx := t.Context()

	// A todo through its life, and one left pending for the depth gauges.
	pub := agentConn(t, b, tokens[publisher])
	for range 2 {
		_, err := pub.Enqueue(ctx, &queuev1.EnqueueRequest{Queue: "jobs", Kind: "obs"})
		require.NoError(t, err)
	}
	worker := agentConn(t, b, tokens[agent])
	claimed, err := worker.Claim(ctx, &queuev1.ClaimRequest{Queue: "jobs", WorkerId: "w1"})
	require.NoError(t, err)
	require.Len(t, claimed.GetTodos(), 1)
	td := claimed.GetTodos()[0]
	_, err = worker.Complete(ctx, &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()})
	require.NoError(t, err)

	// A webhook delivery, through the HTTP edge.
	adm := adminClient(t, b, tokens[tenantAdmin])
	ep, err := adm.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Queue: "hooks", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_BEARER,
	}})
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+b.node.HTTPAddr()+"/hooks/"+ep.GetEndpoint().GetSlug(),
		strings.NewReader(`{"n":1}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+ep.GetSecret())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// A pull adapter's message (its lag gauge).
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379",
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	t.Cleanup(func() { _ = rdb.Close() })
	stream := "sbtest:metrics:" + uuid.NewString()
	t.Cleanup(func() { _ = rdb.Del(context.Background(), stream, stream+":dead").Err() })
	require.NoError(t, rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: map[string]any{"body": `{"n":1}`}}).Err(),
		"this test needs the real Redis on 127.0.0.1:6379 (deploy/local/redis.sh)")
	_, err = adm.CreateAdapter(ctx, redisAdapterRequest(t, "127.0.0.1:6379", stream))
	require.NoError(t, err)

	used := usedMetricNames(t)
	require.Contains(t, used, "switchboard_queue_todos_lease_expired_total", "the names were read")
	var missing []string
	// The depth gauges are sampled every 15 s and the adapter runner
	// reconciles every 10 s: wait for the series, not for a time.
	require.Eventually(t, func() bool {
		fams := families(t, b)
		missing = missing[:0]
		for _, name := range used {
			if _, ok := fams[name]; !ok {
				missing = append(missing, name)
			}
		}
		return len(missing) == 0
	}, time.Minute, 250*time.Millisecond, "metrics used by alerts.yaml or dashboard.json that the node does not export: %v", &missing)
}

// synthetic are series Prometheus itself makes for every target.
var synthetic = []string{"up", "scrape_duration_seconds", "scrape_samples_scraped"}

// usedMetricNames is every metric name an expression of alerts.yaml or
// dashboard.json selects, as the scrape names it: a histogram's _bucket,
// _sum and _count are its family's name.
func usedMetricNames(t *testing.T) []string {
	t.Helper()
	var exprs []string
	var rules struct {
		Groups []struct {
			Rules []struct {
				Expr string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	raw, err := os.ReadFile(filepath.Join(observabilityDir, "alerts.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, &rules))
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	var dash struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	raw, err = os.ReadFile(filepath.Join(observabilityDir, "dashboard.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &dash))
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	require.Greater(t, len(exprs), 20)

	p := parser.NewParser(parser.Options{})
	var names []string
	for _, e := range exprs {
		expr, err := p.ParseExpr(e)
		require.NoError(t, err, e)
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			require.NotEmpty(t, vs.Name, "every selector names its metric: %s", e)
			name := vs.Name
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(name, suffix); ok && !strings.HasSuffix(base, "_total") {
					name = base
				}
			}
			if !slices.Contains(synthetic, name) && !slices.Contains(names, name) {
				names = append(names, name)
			}
			return nil
		})
	}
	slices.Sort(names)
	return names
}

// adminClient is an AdminService client that calls with token.
func adminClient(t *testing.T, b *testBundle, token string) adminv1.AdminServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(b.node.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(auth.Bearer{Token: token, AllowInsecure: true}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return adminv1.NewAdminServiceClient(conn)
}
