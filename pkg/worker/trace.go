package worker

import (
	"context"
	"strconv"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// tracerName is the instrumentation scope of the SDK's spans.
const tracerName = "github.com/switchboard/switchboard/pkg/worker"

// propagator is what the SDK sends with every RPC and reads from
// Todo.trace_parent: W3C Trace Context (and Baggage), the server's own.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// tracerProvider is tp, or the global provider when nil (a no-op one until
// the application sets its own: otel.SetTracerProvider).
func tracerProvider(tp trace.TracerProvider) trace.TracerProvider {
	if tp == nil {
		return otel.GetTracerProvider()
	}
	return tp
}

// tracingDialOption makes a client span of every RPC on the connection and
// sends its W3C trace context to the server.
func tracingDialOption(tp trace.TracerProvider) grpc.DialOption {
	return grpc.WithStatsHandler(otelgrpc.NewClientHandler(
		otelgrpc.WithTracerProvider(tracerProvider(tp)), otelgrpc.WithPropagators(propagator),
		// The health checks (DialOptions.HealthCheck) are no work of the worker's.
		otelgrpc.WithFilter(filters.Not(filters.HealthCheck()))))
}

// todoSpanContext is the trace context the todo carries (the request that
// created it); invalid when it carries none or a malformed one.
func todoSpanContext(todo *queuev1.Todo) trace.SpanContext {
	if todo.GetTraceParent() == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": todo.GetTraceParent()})
	return trace.SpanContextFromContext(ctx)
}

// startHandlerSpan starts the span of one todo's handling: kind consumer,
// named "process <queue>", the child of the todo's stored trace context and
// linked to it (so the trace runs from the request that created the todo to
// its work, and backends that show links rather than remote parents still
// find it); a new root when the todo carries no trace.
func (w *Worker) startHandlerSpan(ctx context.Context, todo *queuev1.Todo) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("messaging.system", "switchboard"),
			attribute.String("messaging.operation.name", "process"),
			attribute.String("messaging.destination.name", w.queue),
			attribute.String("messaging.message.id", strconv.FormatInt(todo.GetId(), 10)),
			attribute.Int64("switchboard.todo.id", todo.GetId()),
			attribute.String("switchboard.queue", w.queue),
			attribute.String("switchboard.todo.kind", todo.GetKind()),
			attribute.Int("switchboard.todo.attempt", int(todo.GetAttempt())),
		),
	}
	if sc := todoSpanContext(todo); sc.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	} else {
		opts = append(opts, trace.WithNewRoot())
	}
	return w.tracer.Start(ctx, "process "+w.queue, opts...)
}

// endHandlerSpan ends the handler's span with its outcome: err (an error
// status, and its kind as switchboard.todo.result), or lost when the lease
// was lost meanwhile.
func endHandlerSpan(span trace.Span, err, lost error) {
	result := "success"
	switch {
	case lost != nil:
		result, err = "lease_lost", lost
	case err == nil:
	case IsPermanent(err):
		result = "permanent_error"
	default:
		if _, ok := retryDelay(err); ok {
			result = "retry_after"
		} else {
			result = "error"
		}
	}
	span.SetAttributes(attribute.String("switchboard.todo.result", result))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(otelcodes.Error, errorText(err))
	}
	span.End()
}

// ackContext is ctx for one RPC about ls (a Heartbeat, Complete, Fail or
// Release, single or batched), carrying their handlers' spans: for one
// traced todo its handler span is the parent of the RPC's span; for
// several, a span named name (kind internal) is the child of the first and
// linked to the others, since a span has one parent. end ends that span.
func (w *Worker) ackContext(ctx context.Context, name string, ls []*lease) (_ context.Context, end func()) {
	var scs []trace.SpanContext
	for _, l := range ls {
		if sc := l.spanContext(); sc.IsValid() {
			scs = append(scs, sc)
		}
	}
	switch len(scs) {
	case 0:
		return ctx, func() {}
	case 1:
		return trace.ContextWithSpanContext(ctx, scs[0]), func() {}
	}
	links := make([]trace.Link, 0, len(scs)-1)
	for _, sc := range scs[1:] {
		links = append(links, trace.Link{SpanContext: sc})
	}
	ctx, span := w.tracer.Start(trace.ContextWithSpanContext(ctx, scs[0]), name,
		trace.WithLinks(links...), trace.WithAttributes(attribute.Int("switchboard.todos", len(ls))))
	return ctx, func() { span.End() }
}
