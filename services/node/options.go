package node

import (
	"context"
	"os"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard/switchboard/pkg/buildinfo"
	"github.com/switchboard/switchboard/pkg/tracing"
)

// Option adjusts what New builds beyond the configuration.
type Option func(*options)

type options struct {
	tracerProvider trace.TracerProvider
}

// WithTracerProvider traces the node with tp instead of the provider the
// OTEL_* environment describes (tests give one over an in-memory exporter).
// The caller owns tp: the node does not shut it down.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracerProvider = tp }
}

// buildTracing is the node's tracing: the given provider, or the one the
// OTEL_* variables describe (off when they ask for no export). It is read
// here rather than by pkg/config because the OpenTelemetry SDK reads the
// rest of those variables itself.
func buildTracing(ctx context.Context, o options, nodeID string) (*tracing.Provider, error) {
	if o.tracerProvider != nil {
		return tracing.Use(o.tracerProvider), nil
	}
	return tracing.FromEnv(ctx, os.LookupEnv, tracing.Resource{ServiceVersion: buildinfo.Get().Version, InstanceID: nodeID})
}
