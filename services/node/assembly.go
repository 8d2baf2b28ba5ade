package node

import (
	"context"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/cluster"
	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/grpcserver"
	"github.com/switchboard/switchboard/pkg/httpserver"
	"github.com/switchboard/switchboard/pkg/lifecycle"
	"github.com/switchboard/switchboard/pkg/metrics"
	"github.com/switchboard/switchboard/pkg/pgnotify"
	"github.com/switchboard/switchboard/pkg/tracing"
	"github.com/switchboard/switchboard/services/ingest/sources"
	"github.com/switchboard/switchboard/services/queue"
	"github.com/switchboard/switchboard/services/realtime"
)

// assembly is a node being built: what the modules built so far share with
// the ones that follow, and the parts each adds to the node's lifecycle.
type assembly struct {
	ctx      context.Context // the build's context (binding listeners)
	cfg      config.Config
	log      *zap.Logger
	services []string // the services the node runs
	hot      bool     // a module in the plan wants the generic-plan pool
	tracing  *tracing.Provider

	// Built by core.
	tls           nodeTLS
	pool, hotPool *pgxpool.Pool // hotPool is pool when no module wants it
	identity      *auth.Store
	authn         *auth.Authenticator
	grpc          *grpcserver.Server
	health        *health
	mux           *http.ServeMux
	metrics       *metrics.Registry
	// metricsHTTP serves /metrics when SWITCHBOARD_METRICS_ADDR is set.
	metricsHTTP *httpserver.Server
	// pprofHTTP serves Go's profiler when SWITCHBOARD_PPROF_ADDR is set.
	pprofHTTP *httpserver.Server
	// Built by the shared modules, when the plan has them.
	notifier *pgnotify.Notifier
	todos    *queue.Todos
	sources  *sources.Store
	realtime *realtime.Server
	events   lifecycleEvents
	// directory is the node's view of node_registry for routing (routing.go),
	// built when the gateway needs a service the node does not run.
	directory *cluster.Directory

	// The node's parts, by phase (see components), and what undoes a build
	// that fails half way.
	core, background []lifecycle.Component
	// drainers run when the node starts draining, after the shutdown delay:
	// they end what holds an RPC open (a long-poll Claim's wait).
	drainers []func()
	// httpClosed runs once the HTTP server has stopped (the gateway's
	// client connection).
	httpClosed []func() error
	closers    []func() error
	http       *httpserver.Server
}

// serve adds a background part: started after the core and before the
// edges, stopped after the edges have drained and before the core.
func (a *assembly) serve(cs ...lifecycle.Component) { a.background = append(a.background, cs...) }

// onDrain adds f to what runs when the node starts draining.
func (a *assembly) onDrain(f func()) { a.drainers = append(a.drainers, f) }

// components is the node's lifecycle in start order; lifecycle.Group stops
// it in reverse, which is the shutdown choreography:
//
//  1. drain: health goes NOT_SERVING; the node keeps serving everything for
//     the shutdown delay; then open streams end and long polls return.
//  2. http, grpc-drain: in-flight HTTP requests, then in-flight RPCs, finish
//     (graceful stops, forced at the grace period).
//  3. the background parts stop (services' loops flush what they hold, then
//     the notifier), so every RPC above ran with them still working.
//  4. readiness, membership (deregisters, so peers see the node leave at
//     once), the pools, and last tracing, which exports the spans still
//     buffered once nothing makes new ones.
//
// The gRPC listener itself starts second, so health (NOT_SERVING) answers
// while the node migrates.
func (a *assembly) components() []lifecycle.Component {
	out := append([]lifecycle.Component{a.tracing}, a.core...)
	out = append(out, a.background...)
	return append(out,
		lifecycle.Func{ComponentName: "grpc-drain", OnStop: a.grpc.Stop},
		a.http,
		lifecycle.Func{ComponentName: "drain", OnStart: func(context.Context) error {
			a.health.startedAll() // the last to start: the node is up
			return nil
		}, OnStop: func(ctx context.Context) error {
			a.health.drain()
			err := a.grpc.Drain(ctx)
			for _, f := range a.drainers {
				f()
			}
			return err
		}},
	)
}

// authenticate is the REST edge's check of who is calling (the gateway's
// Options.Authenticate): the gRPC interceptor's authenticator, its errors as
// the gRPC statuses the gateway renders.
func (a *assembly) authenticate(ctx context.Context, fullMethod string, authorization []string) error {
	if err := a.authn.Authenticate(ctx, fullMethod, authorization); err != nil {
		st, _ := apierr.ToStatus(err)
		return st.Err()
	}
	return nil
}

// undo closes what a failed build opened, newest first.
func (a *assembly) undo() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		_ = a.closers[i]()
	}
}
