package node

import (
	"context"
	"net/http"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/cluster"
	"github.com/switchboard/switchboard/pkg/httpserver"
	"github.com/switchboard/switchboard/pkg/lifecycle"
	"github.com/switchboard/switchboard/pkg/metrics"
)

// MetricsPath is where a node serves its Prometheus metrics.
const MetricsPath = "/metrics"

// metricsAuthMethod is the RPC whose rule GET /metrics on the HTTP listener
// follows: an administrator's credential (the figures cover every tenant,
// as ListNodes does). On SWITCHBOARD_METRICS_ADDR's own listener, which an
// operator keeps inside the cluster network, /metrics is open by the
// Prometheus convention.
const metricsAuthMethod = "/switchboard.registry.v1.RegistryService/ListNodes"

// newMetrics is the node's registry, with the pools' stats and what
// membership reports.
func (a *assembly) newMetrics() {
	a.metrics = metrics.New(metrics.Options{TenantLabel: a.cfg.Metrics.TenantLabel})
	pools := map[string]*pgxpool.Pool{"main": a.pool}
	if a.hotPool != a.pool {
		pools["hot"] = a.hotPool
	}
	a.metrics.RegisterPools(pools)
}

// memberMetrics are membership's hooks and gauges: sweeps, evictions and
// re-registrations as they happen, this node's heartbeat age at scrape
// time, and the cluster's size from node_registry every sampling interval.
func (a *assembly) memberMetrics(o *cluster.Options) {
	c := a.metrics.Cluster
	o.OnSweep, o.OnReregister = c.Swept, c.Reregistered
}

// metricsSampleInterval is how often the node reads the cluster's size.
const metricsSampleInterval = 15 * time.Second

func (a *assembly) serveClusterMetrics() {
	a.metrics.GaugeFunc("cluster", "heartbeat_age_seconds",
		"Time since this node's last successful heartbeat in node_registry.",
		func() float64 { return a.health.member.SinceLastHeartbeat().Seconds() })
	store := cluster.NewStore(a.pool)
	a.serve(lifecycle.NewLoop("cluster-metrics", metricsSampleInterval,
		lifecycle.Warned(a.log, "cluster size sample failed", func(ctx context.Context) (int, error) {
			nodes, err := store.List(ctx)
			if err != nil {
				return 0, err
			}
			a.metrics.Cluster.Size(len(nodes))
			return len(nodes), nil
		})))
}

// routeMetrics puts GET /metrics on the HTTP listener (administrators only)
// or, when SWITCHBOARD_METRICS_ADDR is set, on a listener of its own (bound
// now, so a busy port fails the boot; a.metricsHTTP) and not on the HTTP
// listener.
func (a *assembly) routeMetrics() error {
	if a.cfg.Metrics.Addr == "" {
		a.mux.Handle("GET "+MetricsPath, a.administratorsOnly(a.metrics.Handler()))
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+MetricsPath, a.metrics.Handler())
	srv, err := a.sideListener("metrics-http", a.cfg.Metrics.Addr, mux, maxMetricsConns)
	a.metricsHTTP = srv
	return err
}

// sideListener starts a listener of the node's own beside the HTTP one
// (metrics, pprof): on addr, serving mux to at most maxConns connections at
// once, stopped with the node's other closers.
func (a *assembly) sideListener(name, addr string, mux http.Handler, maxConns int) (*httpserver.Server, error) {
	srv, err := httpserver.New(a.ctx, a.log, addr, mux, httpserver.Options{
		Name: name, BodyReadTimeout: a.cfg.HTTPLimits.ReadTimeout, MaxConns: maxConns,
	})
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, func() error { return srv.Stop(context.WithoutCancel(a.ctx)) })
	return srv, nil
}

// maxMetricsConns bounds the metrics listener: scrapers are few.
const maxMetricsConns = 64

// administratorsOnly answers like the REST edge: 401 without a valid
// credential, 403 for one that is not an administrator's.
func (a *assembly) administratorsOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		md := metadata.MD{}
		for _, v := range r.Header.Values("Authorization") {
			md.Append("authorization", v)
		}
		if _, err := a.authn.Authorize(metadata.NewIncomingContext(r.Context(), md), metricsAuthMethod); err != nil {
			st, _ := apierr.ToStatus(err)
			if st.Code() == codes.Unauthenticated {
				w.Header().Set("WWW-Authenticate", "Bearer")
			}
			http.Error(w, st.Message(), runtime.HTTPStatusFromCode(st.Code()))
			return
		}
		h.ServeHTTP(w, r)
	})
}
