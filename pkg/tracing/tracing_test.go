package tracing_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/protobuf/proto"

	"github.com/switchboard/switchboard/pkg/tracing"
)

// env is a lookup over a fixed environment.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestOffUnlessTheEnvironmentAsksForExport(t *testing.T) {
	t.Parallel()
	for name, lookup := range map[string]func(string) (string, bool){
		"nothing set":           env(),
		"only a service name":   env("OTEL_SERVICE_NAME", "billing", "OTEL_TRACES_SAMPLER", "always_on"),
		"exporter none":         env(tracing.EnvTracesExporter, "none", tracing.EnvEndpoint, "http://127.0.0.1:1"),
		"SDK disabled":          env(tracing.EnvSDKDisabled, "true", tracing.EnvTracesExporter, "otlp"),
		"protocol but no place": env(tracing.EnvProtocol, "grpc"),
	} {
		p, err := tracing.FromEnv(t.Context(), lookup, tracing.Resource{})
		require.NoError(t, err, name)
		require.False(t, p.Enabled(), name)
		requirePropagatesOnly(t, p, name)
		_, span := p.TracerProvider().Tracer("t").Start(t.Context(), "s")
		require.False(t, span.IsRecording(), "%s: a no-op provider", name)
		require.False(t, span.SpanContext().IsValid(), name)
		require.Empty(t, tracing.TraceParent(trace.ContextWithSpan(t.Context(), span)), "%s: nothing to store", name)
		require.NoError(t, p.Stop(t.Context()))
	}
}

// requirePropagatesOnly: a provider that does not trace still carries the
// caller's valid traceparent into a request's context, over gRPC and HTTP,
// and drops a malformed one, so what the request stores continues the
// caller's trace (propagate.go).
func requirePropagatesOnly(t *testing.T, p *tracing.Provider, name string) {
	t.Helper()
	const valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for sent, want := range map[string]string{valid: valid, "00-4bf92f3577b34da6a3ce929d0e0e4736-nothex-01": "", "": ""} {
		ctx := metadata.NewIncomingContext(t.Context(), metadata.Pairs("traceparent", sent))
		got := tracing.TraceParent(p.GRPCServerHandler().TagRPC(ctx, &stats.RPCTagInfo{FullMethodName: "/s/m"}))
		require.Equal(t, want, got, "%s: gRPC, traceparent %q", name, sent)

		var seen string
		h := p.HTTP(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { seen = tracing.TraceParent(r.Context()) }))
		r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/api/queues/q/todos", nil)
		r.Header.Set("traceparent", sent)
		h.ServeHTTP(httptest.NewRecorder(), r)
		require.Equal(t, want, seen, "%s: HTTP, traceparent %q", name, sent)
	}
	require.Len(t, p.DialOptions(), 1, "%s: clients send the context on", name)
}

func TestUnsupportedExporterOrProtocolIsAnError(t *testing.T) {
	t.Parallel()
	_, err := tracing.FromEnv(t.Context(), env(tracing.EnvTracesExporter, "zipkin"), tracing.Resource{})
	require.ErrorContains(t, err, "OTEL_TRACES_EXPORTER")
	_, err = tracing.FromEnv(t.Context(), env(tracing.EnvEndpoint, "http://127.0.0.1:1", tracing.EnvTracesProtocol, "http/json"), tracing.Resource{})
	require.ErrorContains(t, err, "http/json")
}

// collector is a fake OTLP/HTTP receiver: the export requests it got.
type collector struct {
	mu   sync.Mutex
	reqs []*coltracepb.ExportTraceServiceRequest
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := &coltracepb.ExportTraceServiceRequest{}
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, req) != nil {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.reqs = append(c.reqs, req)
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(nil)
}

// exported returns the resource attributes and span names received.
func (c *collector) exported() (map[string]string, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	attrs, names := map[string]string{}, []string(nil)
	for _, req := range c.reqs {
		for _, rs := range req.GetResourceSpans() {
			for _, kv := range rs.GetResource().GetAttributes() {
				attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					names = append(names, s.GetName())
				}
			}
		}
	}
	return attrs, names
}

// Not parallel: the OTLP exporter reads its endpoint from the process
// environment itself.
func TestExportsOverOTLPHTTPWhenAnEndpointIsSet(t *testing.T) {
	for name, tc := range map[string]struct {
		serviceName, want string
	}{
		"default service name": {"", tracing.DefaultServiceName},
		"OTEL_SERVICE_NAME":    {"billing-switchboard", "billing-switchboard"},
	} {
		t.Run(name, func(t *testing.T) {
			c := &collector{}
			srv := httptest.NewServer(c)
			defer srv.Close()
			t.Setenv(tracing.EnvEndpoint, srv.URL)
			t.Setenv("OTEL_SERVICE_NAME", tc.serviceName)
			if tc.serviceName == "" {
				require.NoError(t, os.Unsetenv("OTEL_SERVICE_NAME"))
			}
			p, err := tracing.FromEnv(t.Context(), os.LookupEnv, tracing.Resource{ServiceVersion: "v9", InstanceID: "node-7"})
			require.NoError(t, err)
			require.True(t, p.Enabled())
			_, span := p.TracerProvider().Tracer("t").Start(t.Context(), "the-span")
			span.End()
			require.NoError(t, p.Stop(t.Context()), "Stop flushes what is buffered")
			attrs, names := c.exported()
			require.Equal(t, []string{"the-span"}, names)
			require.Equal(t, tc.want, attrs["service.name"])
			require.Equal(t, "v9", attrs["service.version"])
			require.Equal(t, "node-7", attrs["service.instance.id"])
		})
	}
}

// served runs one request through p.HTTP and returns the trace parent the
// handler saw.
func served(t *testing.T, p *tracing.Provider, traceparent string) string {
	t.Helper()
	got := make(chan string, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hooks/{slug}", func(_ http.ResponseWriter, r *http.Request) { got <- tracing.TraceParent(r.Context()) })
	srv := httptest.NewServer(p.HTTP(mux))
	defer srv.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/hooks/x", nil)
	require.NoError(t, err)
	if traceparent != "" {
		req.Header.Set("traceparent", traceparent)
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return <-got
}

func TestHTTPEdgeContinuesAValidTraceparentAndIgnoresAMalformedOne(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.WithoutCancel(t.Context())) }()
	p := tracing.Use(tp)

	const in = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	got := served(t, p, in)
	require.Regexp(t, `^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$`, got, "the request's trace continues")
	spans := exp.GetSpans()
	require.Len(t, spans, 1)
	require.Equal(t, "POST /hooks/{slug}", spans[0].Name, "named by the route, not the path")
	require.Equal(t, "b7ad6b7169203331", spans[0].Parent.SpanID().String(), "the caller's span is the parent")
	require.Equal(t, got[36:52], spans[0].SpanContext.SpanID().String(), "the handler sees the server span")
	exp.Reset()

	for _, bad := range []string{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331", "00-00000000000000000000000000000000-b7ad6b7169203331-01",
		"zz-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "garbage"} {
		got := served(t, p, bad)
		require.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, got, bad)
		require.NotContains(t, got, "0af7651916cd43dd8448eb211c80319c", "%s: a malformed header is dropped", bad)
		spans := exp.GetSpans()
		require.Len(t, spans, 1)
		require.False(t, spans[0].Parent.IsValid(), "%s: a new root", bad)
		exp.Reset()
	}
}

func TestTraceParentOfAContext(t *testing.T) {
	t.Parallel()
	require.Empty(t, tracing.TraceParent(t.Context()), "no span, nothing")
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	require.Equal(t, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		tracing.TraceParent(trace.ContextWithSpanContext(t.Context(), sc)))
}

func TestHealthProbesAreNotTraced(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.WithoutCancel(t.Context())) }()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("GET /api/x", func(http.ResponseWriter, *http.Request) {})
	srv := httptest.NewServer(tracing.Use(tp).HTTP(mux))
	defer srv.Close()
	for _, path := range []string{"/health", "/api/x"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
	}
	spans := exp.GetSpans()
	require.Len(t, spans, 1, "only the API call")
	require.Equal(t, "GET /api/x", spans[0].Name)
}
