package tracing

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"
)

// Probes are not traced: grpc.health.v1 (load balancers', Kubernetes' and
// the worker SDK's health checks) and GET /health would fill a backend with
// spans that say nothing.
var notHealth = otelgrpc.WithFilter(filters.Not(filters.HealthCheck()))

// healthPath is the HTTP edge's health route.
const healthPath = "/health"

// GRPCServerHandler is the stats handler that makes a server span of every
// RPC the node serves, the child of the caller's W3C trace context when it
// sent one. When tracing is off it makes no span but still puts that
// context into the request's (propagate.go).
func (p *Provider) GRPCServerHandler() stats.Handler {
	if !p.enabled {
		return propagateOnly{}
	}
	return otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(p.tp), otelgrpc.WithPropagators(Propagator()), notHealth)
}

// DialOptions make a client span of every RPC on a connection the node
// dials (the gateway's upstream, the realtime mesh), and send its context
// along. When tracing is off they only send the context of the call's ctx.
func (p *Provider) DialOptions() []grpc.DialOption {
	if !p.enabled {
		return []grpc.DialOption{grpc.WithStatsHandler(injectOnly{})}
	}
	return []grpc.DialOption{grpc.WithStatsHandler(
		otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(p.tp), otelgrpc.WithPropagators(Propagator()), notHealth))}
}

// HTTP wraps the node's HTTP handler: a server span for every request
// (named by method and the mux pattern it matched, "POST /hooks/{slug}"),
// the child of the caller's traceparent header when it sent a valid one.
// When tracing is off it only puts that header's context into the
// request's.
func (p *Provider) HTTP(h http.Handler) http.Handler {
	if !p.enabled {
		return propagateHTTP(h)
	}
	return otelhttp.NewHandler(h, "http",
		otelhttp.WithTracerProvider(p.tp), otelhttp.WithPropagators(Propagator()),
		otelhttp.WithFilter(func(r *http.Request) bool { return r.URL.Path != healthPath }),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			switch {
			case r.Pattern == "":
				return r.Method
			case strings.Contains(r.Pattern, " "): // "POST /hooks/{slug}": the method is in it
				return r.Pattern
			default:
				return r.Method + " " + r.Pattern
			}
		}))
}
