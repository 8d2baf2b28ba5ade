// Package gateway is the REST/JSON edge: grpc-gateway routes for every
// service, each reached over a client connection of its own (the node's own
// gRPC port for the services it runs, the live nodes the registry lists
// for the others: docs/routing.md), because only a real connection carries
// server streams; and the forwarding of webhooks to an ingest node (hooks.go).
package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	registryv1 "github.com/switchboard/switchboard/gen/switchboard/registry/v1"
)

// Name is the gateway's name in `switchboard serve`.
const Name = "gateway"

// Gateway owns the upstream client connections and the route mux.
type Gateway struct {
	conns []*grpc.ClientConn
	mux   *runtime.ServeMux
	opts  Options
	// routes names the RPC behind each route (routes.go).
	routes map[string]string
	// secretParams are the names a query parameter may not end in: they
	// would set a secret (secrets.go).
	secretParams map[string]bool
}

// Options configure New. The zero value checks no credential at the edge
// and caps nothing (tests of the gateway alone).
type Options struct {
	// Authenticate, when set, vets the caller of every route before its body
	// is read: fullMethod is the route's RPC, authorization the request's
	// Authorization header values. It returns a gRPC status error (401, or
	// 503 when credentials cannot be checked) or nil. Scopes are left to the
	// upstream's interceptor.
	Authenticate func(ctx context.Context, fullMethod string, authorization []string) error
	// MaxBodyBytes caps a request body: a larger one is answered 413 before
	// more than this is read.
	MaxBodyBytes int64
	// MaxRequestBytes is the largest request message the upstream accepts;
	// a request that encodes larger is answered 413 without being sent.
	MaxRequestBytes int
	// Dial adds to every upstream dial's options, after the upstream's own
	// (Upstream.Dial): what every connection shares (a stats handler), or
	// the node's TLS when every service is at New's upstream.
	Dial []grpc.DialOption
	// Upstreams, by service name (Services), take that service's calls
	// elsewhere than New's upstream.
	Upstreams map[string]Upstream
}

// Upstream is where one service's calls go.
type Upstream struct {
	// Target is a gRPC dial target: host:port, or a resolver's target
	// (cluster.Target: the live nodes running the service).
	Target string
	// Dial comes before Options.Dial: this target's transport credentials
	// and service config (round_robin over a resolver's addresses).
	Dial []grpc.DialOption
}

// requestIDHeader is forwarded both ways so one id names a call end to end.
const requestIDHeader = "X-Request-Id"

// tenantHeader is forwarded to the gRPC side, where pkg/auth lets an
// administrator name the tenant a call acts in (auth.TenantHeader).
const tenantHeader = "X-Switchboard-Tenant"

// services are the routes the gateway serves, by the services behind them.
// Their names are the services' names in `switchboard serve`.
var services = []struct {
	name     string
	desc     *grpc.ServiceDesc
	register func(context.Context, *runtime.ServeMux, *grpc.ClientConn) error
}{
	{"registry", &registryv1.RegistryService_ServiceDesc, registryv1.RegisterRegistryServiceHandler},
	{"queue", &queuev1.QueueService_ServiceDesc, queuev1.RegisterQueueServiceHandler},
	{"ingest", &ingestv1.IngestService_ServiceDesc, ingestv1.RegisterIngestServiceHandler},
	{"realtime", &realtimev1.RealtimeService_ServiceDesc, realtimev1.RegisterRealtimeServiceHandler},
	{"admin", &adminv1.AdminService_ServiceDesc, adminv1.RegisterAdminServiceHandler},
}

// Services are the names of the services the gateway fronts.
func Services() []string {
	out := make([]string, len(services))
	for i, s := range services {
		out[i] = s.name
	}
	return out
}

// New dials each service's upstream (lazily: a connection is made on first
// use) and registers its routes on its own connection: o.Upstreams[name]
// when given, else upstream. A dial is plaintext unless its options
// (Upstream.Dial, then o.Dial, after the defaults) carry other transport
// credentials: the node's TLS, verifying upstream against its CA.
func New(ctx context.Context, upstream string, o Options) (*Gateway, error) {
	g := &Gateway{opts: o}
	var err error
	if g.routes, err = rpcRoutes(); err != nil {
		return nil, err
	}
	if g.secretParams, err = secretParams(); err != nil {
		return nil, err
	}
	g.mux = runtime.NewServeMux(
		// Proto field names (snake_case) and every field present, so clients
		// and the seed's documented shapes see the same keys whatever the values.
		runtime.WithMarshalerOption(runtime.MIMEWildcard, &runtime.HTTPBodyMarshaler{
			Marshaler: &runtime.JSONPb{
				MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true},
				UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
			},
		}),
		// Realtime channel names may contain "/": clients send it as %2F and
		// this mode hands it to the handler unescaped instead of routing on it.
		runtime.WithUnescapingMode(runtime.UnescapingModeAllExceptReserved),
		runtime.WithIncomingHeaderMatcher(headerMatcher),
		runtime.WithForwardResponseOption(healthHTTPStatus),
		runtime.WithErrorHandler(g.handleError),
		runtime.WithRoutingErrorHandler(g.handleRoutingError),
		// The edge's checks run after routing (which names the RPC) and
		// before the route's handler, the first thing to read the body.
		runtime.WithMiddlewares(g.edge),
		// Off: it turns a form POST into a GET by parsing the body inside
		// the mux, before the edge's checks could run.
		runtime.WithDisablePathLengthFallback(),
		runtime.WithOutgoingHeaderMatcher(func(key string) (string, bool) {
			if http.CanonicalHeaderKey(key) == requestIDHeader {
				return requestIDHeader, true
			}
			return "", false
		}),
	)
	for _, s := range services {
		u, ok := o.Upstreams[s.name]
		if !ok {
			u = Upstream{Target: upstream}
		}
		if u.Target == "" {
			_ = g.Close()
			return nil, fmt.Errorf("gateway: no upstream for %s", s.name)
		}
		dial := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithChainUnaryInterceptor(g.unaryUpstream), grpc.WithChainStreamInterceptor(streamUpstream)}, u.Dial...)
		conn, err := grpc.NewClient(u.Target, append(dial, o.Dial...)...)
		if err != nil {
			_ = g.Close()
			return nil, fmt.Errorf("dial gateway upstream %s for %s: %w", u.Target, s.name, err)
		}
		g.conns = append(g.conns, conn)
		if err := s.register(ctx, g.mux, conn); err != nil {
			_ = g.Close()
			return nil, fmt.Errorf("register gateway routes: %w", err)
		}
	}
	return g, nil
}

func headerMatcher(key string) (string, bool) {
	switch http.CanonicalHeaderKey(key) {
	case requestIDHeader:
		return "x-request-id", true
	case tenantHeader:
		return "x-switchboard-tenant", true
	}
	return runtime.DefaultHeaderMatcher(key)
}

// healthHTTPStatus makes GET /health answer 503 when the node is unhealthy,
// so HTTP load balancers and probes act on it; healthy and degraded are 200
// (a degraded node still serves what it can).
func healthHTTPStatus(_ context.Context, w http.ResponseWriter, m proto.Message) error {
	if h, ok := m.(*registryv1.GetHealthResponse); ok && h.GetStatus() == "unhealthy" {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	return nil
}

// Handler serves the gateway routes.
func (g *Gateway) Handler() http.Handler { return g.mux }

// Close closes the upstream connections.
func (g *Gateway) Close() error {
	var errs []error
	for _, c := range g.conns {
		errs = append(errs, c.Close())
	}
	g.conns = nil
	return errors.Join(errs...)
}
