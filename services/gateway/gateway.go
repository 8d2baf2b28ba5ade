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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
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
}

// requestIDHeader is forwarded both ways so one id names a call end to end.
const requestIDHeader = "X-Request-Id"

// New dials upstream (lazily: the connection is made on first use) and
// registers every service's routes. The dial is plaintext unless dial
// (added after the defaults) carries other transport credentials: the
// node's TLS, verifying upstream against its CA.
func New(ctx context.Context, upstream string, dial ...grpc.DialOption) (*Gateway, error) {
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dial...)
	conn, err := grpc.NewClient(upstream, opts...)
	if err != nil {
		return nil, fmt.Errorf("dial gateway upstream %s: %w", upstream, err)
	}
	mux := runtime.NewServeMux(
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
		runtime.WithErrorHandler(retryableErrors),
		runtime.WithOutgoingHeaderMatcher(func(key string) (string, bool) {
			if http.CanonicalHeaderKey(key) == requestIDHeader {
				return requestIDHeader, true
			}
			return "", false
		}),
	)
	registrations := []func(context.Context, *runtime.ServeMux, *grpc.ClientConn) error{
		registryv1.RegisterRegistryServiceHandler,
		queuev1.RegisterQueueServiceHandler,
		ingestv1.RegisterIngestServiceHandler,
		realtimev1.RegisterRealtimeServiceHandler,
		adminv1.RegisterAdminServiceHandler,
	}
	for _, register := range registrations {
		if err := register(ctx, mux, conn); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("register gateway routes: %w", err)
		}
	}
	return &Gateway{conn: conn, mux: mux}, nil
}

func headerMatcher(key string) (string, bool) {
	if http.CanonicalHeaderKey(key) == requestIDHeader {
		return "x-request-id", true
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

// retryAfterSeconds is the Retry-After of a 503: long enough for a database
// restart or failover to finish, short enough not to idle a client.
const retryAfterSeconds = "2"

// retryableErrors is the default error rendering plus Retry-After on the
// 503 of UNAVAILABLE (a database fault, a draining node), which HTTP clients
// and proxies use to pace their retries.
func retryableErrors(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	if status.Code(err) == codes.Unavailable {
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	runtime.DefaultHTTPErrorHandler(ctx, mux, m, w, r, err)
}

// Handler serves the gateway routes.
func (g *Gateway) Handler() http.Handler { return g.mux }

// Close closes the upstream connection.
func (g *Gateway) Close() error { return g.conn.Close() }
