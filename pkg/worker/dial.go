package worker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/health" // client-side health checking (DialOptions.HealthCheck)
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// DialOptions configure Dial. The zero value dials plaintext without
// credentials (a local node).
type DialOptions struct {
	// Token, when set, is sent with every RPC as "authorization: Bearer
	// <token>" (a credential minted with `switchboard token`).
	Token string
	// TLS, when set, secures every connection; its ServerName defaults to
	// each node's host. Without it connections are plaintext.
	TLS *tls.Config
	// AllowInsecure permits sending Token over plaintext (loopback, or a
	// service mesh that encrypts for you). Without it Dial refuses a Token
	// without TLS, as gRPC refuses to send such credentials in the clear.
	AllowInsecure bool
	// KeepaliveTime is how long a connection may be silent before it is
	// pinged, KeepaliveTimeout how long the ping may go unanswered before
	// the node is given up and its RPCs fail over. Defaults 12 s and 4 s:
	// a node that died silently is noticed within about 16 s (one that
	// closed its connections, at once). The switchboard server lets a
	// client ping every 10 s at most (pkg/grpcserver's enforcement policy)
	// and sends GOAWAY too_many_pings to one that pings more often, so
	// keep KeepaliveTime above 10 s.
	KeepaliveTime, KeepaliveTimeout time.Duration
	// HealthCheck watches each node's gRPC health (grpc.health.v1, service
	// switchboard.queue.v1.QueueService) and sends RPCs only to nodes that
	// report SERVING: a switchboard node reports NOT_SERVING while it
	// starts, has no database, and during its shutdown delay, so workers
	// leave it before it drains. A server without the health service
	// counts as healthy.
	HealthCheck bool
	// TracerProvider makes a client span of every RPC and sends its W3C
	// trace context to the node (traceparent), so a node that traces puts
	// its spans in the worker's trace. Default: the global provider
	// (otel.GetTracerProvider), a no-op one unless the application set one;
	// the trace context of the caller's spans is sent either way.
	TracerProvider trace.TracerProvider
	// GRPCOptions are added after Dial's own (a later option wins).
	GRPCOptions []grpc.DialOption
}

// Defaults of DialOptions and the reconnect backoff.
const (
	defaultKeepaliveTime    = 12 * time.Second
	defaultKeepaliveTimeout = 4 * time.Second
	reconnectMaxDelay       = 5 * time.Second
	// nodesScheme is the scheme of Dial's own resolver for a list of
	// addresses; it is registered with the one ClientConn only.
	nodesScheme = "switchboard-nodes"
)

// Dial returns a client connection to one or several QueueService nodes,
// for New. targets is either "host:port" addresses (one or several; a host
// name among them is looked up when connecting, one connection per
// entry), or one gRPC target with a scheme, such as
// "dns:///queue.internal:7000": one connection to every address the name
// resolves to, looked up again when connections fail. RPCs are balanced round robin over the
// nodes that are up; a node that fails (its connections close, or its
// keepalive pings go unanswered) is left out while gRPC reconnects to it
// with backoff (at most 5 s apart), so a Worker's claims, heartbeats and
// acks go on through the other nodes: leases live in the database, not in
// a node. Like grpc.NewClient, Dial connects lazily and does no I/O.
// Close the connection when done.
func Dial(targets []string, opts DialOptions) (*grpc.ClientConn, error) {
	target, res, err := dialTarget(targets)
	if err != nil {
		return nil, err
	}
	creds := insecure.NewCredentials()
	switch {
	case opts.TLS != nil:
		creds = credentials.NewTLS(opts.TLS)
	case opts.Token != "" && !opts.AllowInsecure:
		return nil, errors.New("worker: a Token needs TLS, or AllowInsecure to send it in plaintext")
	}
	ka := keepalive.ClientParameters{Time: opts.KeepaliveTime, Timeout: opts.KeepaliveTimeout, PermitWithoutStream: true}
	if ka.Time <= 0 {
		ka.Time = defaultKeepaliveTime
	}
	if ka.Timeout <= 0 {
		ka.Timeout = defaultKeepaliveTimeout
	}
	sc := `{"loadBalancingConfig": [{"round_robin": {}}]`
	if opts.HealthCheck {
		sc += fmt.Sprintf(`, "healthCheckConfig": {"serviceName": %q}`, queuev1.QueueService_ServiceDesc.ServiceName)
	}
	sc += "}"
	bo := grpcbackoff.DefaultConfig
	bo.MaxDelay = reconnectMaxDelay
	dopts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultServiceConfig(sc),
		grpc.WithKeepaliveParams(ka),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bo, MinConnectTimeout: 5 * time.Second}),
		tracingDialOption(opts.TracerProvider),
	}
	if res != nil {
		dopts = append(dopts, grpc.WithResolvers(res))
	}
	if opts.Token != "" {
		dopts = append(dopts, grpc.WithPerRPCCredentials(bearer{token: opts.Token, insecure: opts.TLS == nil}))
	}
	dopts = append(dopts, opts.GRPCOptions...)
	conn, err := grpc.NewClient(target, dopts...)
	if err != nil {
		return nil, fmt.Errorf("worker: dial %s: %w", strings.Join(targets, ","), err)
	}
	return conn, nil
}

// dialTarget turns Dial's targets into a grpc.NewClient target and, for a
// list of addresses, the manual resolver that serves it.
func dialTarget(targets []string) (string, resolver.Builder, error) {
	switch {
	case len(targets) == 0:
		return "", nil, errors.New("worker: no address to dial")
	case len(targets) == 1 && hasScheme(targets[0]):
		return targets[0], nil, nil
	}
	eps := make([]resolver.Endpoint, 0, len(targets))
	for _, a := range targets {
		if hasScheme(a) {
			return "", nil, fmt.Errorf("worker: %q: a target with a scheme must be the only one", a)
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			return "", nil, fmt.Errorf("worker: address %q is not host:port: %w", a, err)
		}
		eps = append(eps, resolver.Endpoint{Addresses: []resolver.Address{{Addr: a, ServerName: a}}})
	}
	r := manual.NewBuilderWithScheme(nodesScheme)
	r.InitialState(resolver.State{Endpoints: eps})
	return nodesScheme + ":///" + targets[0], r, nil
}

// hasScheme reports whether target starts with a registered gRPC resolver
// scheme ("dns:///name:port", "unix:///path"…), not a plain "host:port".
func hasScheme(target string) bool {
	scheme, _, ok := strings.Cut(target, ":")
	return ok && resolver.Get(scheme) != nil
}

// bearer is per-RPC credentials sending "authorization: Bearer <token>",
// what the switchboard server's authorization expects (pkg/auth).
type bearer struct {
	token    string
	insecure bool // Dial allowed it over plaintext
}

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials.
func (b bearer) RequireTransportSecurity() bool { return !b.insecure }
