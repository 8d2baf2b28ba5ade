package tracing

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceparentHeader is the W3C Trace Context header (and metadata key).
const traceparentHeader = "traceparent"

// Propagator is the node's propagation: W3C Trace Context and Baggage, on
// every edge it serves and every call it makes.
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// TraceParent is the W3C traceparent of ctx's current span
// ("00-<trace id>-<span id>-<flags>", 55 characters), or "" when ctx
// carries none: what a todo stores so that its worker's span joins the
// trace of the request that created it. A malformed header never gets this
// far: the propagator drops it where the request came in.
func TraceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return "" // tracing off or no trace: not even the carrier is allocated
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c[traceparentHeader]
}
