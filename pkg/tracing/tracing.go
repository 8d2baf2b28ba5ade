// Package tracing is the node's OpenTelemetry tracing: the TracerProvider
// built from the standard OTEL_* environment variables (off, at no cost,
// unless they ask for export), the W3C propagation every edge uses, the
// stats handlers and HTTP middleware that put spans on the node's servers
// and clients, and the trace context a todo carries (TraceParent).
package tracing

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// The environment variables that decide whether and how a node exports
// (the OpenTelemetry specification's names). The exporters and the SDK read
// the rest themselves: OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _INSECURE,
// _CERTIFICATE…, OTEL_TRACES_SAMPLER(_ARG), OTEL_BSP_*, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES.
const (
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES says otherwise.
const DefaultServiceName = "switchboard"

// Provider is a node's tracing: a TracerProvider and what the node's
// lifecycle does with it. It is a lifecycle component that flushes and
// shuts down the exporter on Stop (place it first, so it stops last, after
// every span of the services has ended).
type Provider struct {
	tp trace.TracerProvider
	// sdk is the provider this package built and owns (Stop shuts it
	// down); nil when tracing is off or the provider was given (Use).
	sdk     *sdktrace.TracerProvider
	enabled bool
}

// Off is tracing turned off: no span is made, no handler installed, no
// trace context read or stored.
func Off() *Provider { return &Provider{tp: noop.NewTracerProvider()} }

// Use traces with tp, which the caller owns and shuts down (tests give an
// SDK provider over tracetest's in-memory exporter).
func Use(tp trace.TracerProvider) *Provider { return &Provider{tp: tp, enabled: true} }

// Resource describes the node to the tracing backend.
type Resource struct {
	// ServiceVersion is service.version (the build's version).
	ServiceVersion string
	// InstanceID is service.instance.id (the node's id).
	InstanceID string
}

// FromEnv builds the provider the environment asks for (lookup is
// os.LookupEnv outside tests): Off unless OTEL_TRACES_EXPORTER is "otlp",
// or it is unset and an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is; OTEL_SDK_DISABLED=true and
// OTEL_TRACES_EXPORTER=none turn it off. The exporter speaks grpc or
// http/protobuf (the default) as OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or
// OTEL_EXPORTER_OTLP_PROTOCOL says; spans leave in batches. Exporting
// never blocks a request: a collector that is down costs dropped spans.
func FromEnv(ctx context.Context, lookup func(string) (string, bool), r Resource) (*Provider, error) {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	if strings.EqualFold(get(EnvSDKDisabled), "true") {
		return Off(), nil
	}
	switch exp := strings.ToLower(get(EnvTracesExporter)); exp {
	case "none":
		return Off(), nil
	case "":
		if get(EnvEndpoint) == "" && get(EnvTracesEndpoint) == "" {
			return Off(), nil
		}
	case "otlp":
	default:
		return nil, fmt.Errorf("%s=%q: this build exports traces with otlp only (or none)", EnvTracesExporter, exp)
	}
	protocol := get(EnvTracesProtocol)
	if protocol == "" {
		protocol = get(EnvProtocol)
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch protocol {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("%s: protocol %q is not supported (grpc or http/protobuf)", EnvTracesProtocol, protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := nodeResource(ctx, r)
	if err != nil {
		return nil, errors.Join(err, exp.Shutdown(ctx))
	}
	// The SDK reads OTEL_TRACES_SAMPLER(_ARG) and OTEL_BSP_* itself.
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Provider{tp: sdk, sdk: sdk, enabled: true}, nil
}

// nodeResource is service.name "switchboard", the version and the node's
// id, overridden by OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
func nodeResource(ctx context.Context, r Resource) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{attribute.String("service.name", DefaultServiceName)}
	if r.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", r.ServiceVersion))
	}
	if r.InstanceID != "" {
		attrs = append(attrs, attribute.String("service.instance.id", r.InstanceID))
	}
	env, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("tracing: resource from OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	res, err := resource.Merge(resource.NewSchemaless(attrs...), env)
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return res, nil
}

// Enabled reports whether spans are made and trace context is carried.
func (p *Provider) Enabled() bool { return p.enabled }

// TracerProvider is the provider (a no-op one when tracing is off).
func (p *Provider) TracerProvider() trace.TracerProvider { return p.tp }

// Name implements lifecycle.Component.
func (p *Provider) Name() string { return "tracing" }

// Start implements lifecycle.Component; the provider works from New on.
func (p *Provider) Start(context.Context) error { return nil }

// Stop exports the spans still buffered and shuts the exporter down, within
// ctx. A provider given to Use is left to its owner.
func (p *Provider) Stop(ctx context.Context) error {
	if p.sdk == nil {
		return nil
	}
	return errors.Join(p.sdk.ForceFlush(ctx), p.sdk.Shutdown(ctx))
}
