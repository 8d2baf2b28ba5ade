package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
)

// With tracing off a node makes no spans, but it still carries the
// caller's W3C trace context through a request: what the request stores
// for later work (a todo's trace_parent, from an Enqueue, a webhook or a
// PublishEvent) then continues the caller's trace whatever the node's own
// settings, so a worker can join it. The context is extracted where a
// request comes in (gRPC, HTTP) and injected into the calls the node makes
// on its behalf (the gateway's upstream), exactly as the instrumentation
// does when tracing is on, minus the spans. A malformed header is dropped
// by the propagator, as it is then.

// traceContext is all a node that does not trace carries: the W3C
// traceparent (baggage is for spans it does not make). It is one value, and
// every path below returns at once when there is no trace context, so a
// call without one costs a map lookup.
var traceContext = propagation.TraceContext{}

// propagateOnly is the server stats handler of a node that does not trace.
type propagateOnly struct{}

func (propagateOnly) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	md, _ := metadata.FromIncomingContext(ctx)
	if len(md.Get(traceparentHeader)) == 0 {
		return ctx
	}
	return traceContext.Extract(ctx, mdCarrier(md))
}

func (propagateOnly) HandleRPC(context.Context, stats.RPCStats) {}

func (propagateOnly) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (propagateOnly) HandleConn(context.Context, stats.ConnStats) {}

// injectOnly is the client stats handler of a node that does not trace: it
// sends the trace context of the call's ctx (a request's, extracted above)
// with the call.
type injectOnly struct{}

func (injectOnly) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	if tp := TraceParent(ctx); tp != "" {
		return metadata.AppendToOutgoingContext(ctx, traceparentHeader, tp)
	}
	return ctx
}

func (injectOnly) HandleRPC(context.Context, stats.RPCStats) {}

func (injectOnly) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (injectOnly) HandleConn(context.Context, stats.ConnStats) {}

// propagateHTTP puts an HTTP request's trace context into its context.
func propagateHTTP(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(traceparentHeader) == "" {
			h.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r.WithContext(traceContext.Extract(r.Context(), propagation.HeaderCarrier(r.Header))))
	})
}

// mdCarrier reads gRPC metadata as a propagation carrier (keys are lower
// case in both).
type mdCarrier metadata.MD

func (c mdCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c mdCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c mdCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
