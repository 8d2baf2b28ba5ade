// Package gateway is the REST/JSON edge: grpc-gateway routes for every
// service, reached by dialing the gRPC endpoint (in one process, its own
// port), because only a real connection carries server streams.
package gateway

import (
	"context"
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

// Gateway owns the upstream client connection and the route mux.
type Gateway struct {
	conn *grpc.ClientConn
	mux  *runtime.ServeMux
	opts Options
	// routes names the RPC behind each route (routes.go).
	routes map[string]string
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
	// Dial adds to the upstream dial's options: the node's TLS (transport
	// credentials verifying upstream against its CA) when it has one.
	Dial []grpc.DialOption
}

// requestIDHeader is forwarded both ways so one id names a call end to end.
const requestIDHeader = "X-Request-Id"

// tenantHeader is forwarded to the gRPC side, where pkg/auth lets an
// administrator name the tenant a call acts in (auth.TenantHeader).
const tenantHeader = "X-Switchboard-Tenant"

// services are the routes the gateway serves, by the services behind them.
var services = []struct {
	desc     *grpc.ServiceDesc
	register func(context.Context, *runtime.ServeMux, *grpc.ClientConn) error
}{
	{&registryv1.RegistryService_ServiceDesc, registryv1.RegisterRegistryServiceHandler},
	{&queuev1.QueueService_ServiceDesc, queuev1.RegisterQueueServiceHandler},
	{&ingestv1.IngestService_ServiceDesc, ingestv1.RegisterIngestServiceHandler},
	{&realtimev1.RealtimeService_ServiceDesc, realtimev1.RegisterRealtimeServiceHandler},
	{&adminv1.AdminService_ServiceDesc, adminv1.RegisterAdminServiceHandler},
}

// New dials upstream (lazily: the connection is made on first use) and
// registers every service's routes. The dial is plaintext unless o.Dial
// (added after the defaults) carries other transport credentials: the
// node's TLS, verifying upstream against its CA.
func New(ctx context.Context, upstream string, o Options) (*Gateway, error) {
	g := &Gateway{opts: o}
	var err error
	if g.routes, err = rpcRoutes(); err != nil {
		return nil, err
	}
	dial := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(g.unaryUpstream), grpc.WithChainStreamInterceptor(streamUpstream)}, o.Dial...)
	g.conn, err = grpc.NewClient(upstream, dial...)
	if err != nil {
		return nil, fmt.Errorf("dial gateway upstream %s: %w", upstream, err)
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
		if err := s.register(ctx, g.mux, g.conn); err != nil {
			_ = g.conn.Close()
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

// Close closes the upstream connection.
func (g *Gateway) Close() error { return g.conn.Close() }
