// Package grpcserver is the gRPC server every Switchboard node runs: one
// interceptor chain for all services, the standard grpc.health.v1 service,
// server reflection, and the shutdown choreography (NOT_SERVING, delay, drain
// streams, graceful stop, forced stop).
package grpcserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"buf.build/go/protovalidate"
	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/stats"

	sblog "github.com/switchboard/switchboard/pkg/logging"
)

// Limits on what one client can make a node hold.
const (
	// MaxRecvMsgSize is the largest request message a node accepts (gRPC's
	// own default, stated because the REST edge caps bodies to match it:
	// config.DefaultHTTPMaxBody). A bigger one is refused as it arrives,
	// before it is decoded.
	MaxRecvMsgSize = 4 << 20
	// MaxConcurrentStreams bounds the RPCs one connection may have open at
	// once, so one client cannot make a node hold unbounded streams (a
	// goroutine and buffers each). Generous, because the REST gateway
	// carries all of its HTTP clients over one connection: it matches the
	// HTTP edge's default connection cap (SWITCHBOARD_HTTP_MAX_CONNS), and
	// calls beyond it wait for a free stream.
	MaxConcurrentStreams = 4096
)

// Flow-control windows: what a client may send on one stream, and on one
// connection, before the server has read it. Fixed (see New) and large
// enough that a request of MaxRecvMsgSize streams at tens of MB/s over a
// 50 ms round trip.
const (
	streamWindow = 1 << 20
	connWindow   = 4 << 20
)

// Keepalive: the server pings a connection silent for keepaliveTime
// (long-lived streams sit idle between events, and pings keep NATs and
// proxies from dropping them silently) and drops it when the ping goes
// unanswered for keepaliveTimeout. Clients may ping at most every
// minPingInterval (the worker SDK pings every 12 s): a client pinging
// faster is sent GOAWAY, so pings cannot be used to keep a node busy.
const (
	keepaliveTime    = 30 * time.Second
	keepaliveTimeout = 10 * time.Second
	minPingInterval  = 10 * time.Second
)

// Server wraps grpc.Server with health, reflection and the lifecycle contract.
type Server struct {
	log      *zap.Logger
	grpc     *grpc.Server
	health   *health.Server
	lis      net.Listener
	delay    time.Duration
	services []string

	validator       protovalidate.Validator
	authorize       func(ctx context.Context, fullMethod string) (context.Context, error)
	authorizeStream func(ctx context.Context, fullMethod string) (context.Context, func(), error)
	limit           grpc.StreamServerInterceptor
	streams         atomic.Int64

	drainCtx context.Context
	drain    context.CancelFunc

	metrics *grpcprom.ServerMetrics

	failed    chan error
	startOnce sync.Once
	stopOnce  sync.Once
	served    chan struct{}
}

// Options configure New.
type Options struct {
	// Addr is the host:port to listen on (":0" picks a free port).
	Addr string
	// ShutdownDelay is how long Drain keeps serving after health reports
	// NOT_SERVING, so load balancers stop routing here first.
	ShutdownDelay time.Duration
	// Authorize, if set, vets every call before validation and the handler:
	// it returns the context to continue with (carrying the caller) or an
	// apierr error (Unauthenticated, PermissionDenied, …).
	Authorize func(ctx context.Context, fullMethod string) (context.Context, error)
	// AuthorizeStream, if set, vets every stream instead of Authorize, and
	// may end it later: the context it returns ends, with the apierr error
	// the client gets as its cause, when the caller's credential stops
	// verifying (auth.Authenticator.AuthorizeStream). release runs when the
	// stream ends.
	AuthorizeStream func(ctx context.Context, fullMethod string) (_ context.Context, release func(), _ error)
	// TLS, if set, secures the listener (pkg/tlsconfig.Server); nil serves
	// plaintext.
	TLS *tls.Config
	// LimitStreams, if set, admits or refuses each stream after Authorize
	// (it sees the caller): the node's cap on open streams per credential
	// and tenant (auth.StreamLimiter).
	LimitStreams grpc.StreamServerInterceptor
	// StatsHandler, if set, sees every RPC from its first byte: the node's
	// tracing (pkg/tracing), whose server span then encloses the whole
	// interceptor chain.
	StatsHandler stats.Handler
	// Metrics, if set, is where the server registers its per-method
	// metrics (grpc_server_*: calls by method and code, handling-time
	// histograms); nil records none.
	Metrics prometheus.Registerer
}

// New builds the server and binds its listener (so Addr is known before
// Start and a busy port fails the boot early). It starts no goroutines.
func New(ctx context.Context, log *zap.Logger, opts Options) (*Server, error) {
	lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen gRPC on %s: %w", opts.Addr, err)
	}
	validator, err := protovalidate.New()
	if err != nil {
		_ = lis.Close()
		return nil, fmt.Errorf("request validator: %w", err)
	}
	drainCtx, drain := context.WithCancel(context.WithoutCancel(ctx))
	s := &Server{
		log:             log.With(sblog.Component("grpc")),
		validator:       validator,
		authorize:       opts.Authorize,
		authorizeStream: opts.AuthorizeStream,
		limit:           opts.LimitStreams,
		health:          health.NewServer(),
		lis:             lis,
		delay:           opts.ShutdownDelay,
		drainCtx:        drainCtx,
		drain:           drain,
		failed:          make(chan error, 1),
		served:          make(chan struct{}),
		metrics:         newServerMetrics(opts.Metrics),
	}
	serverOpts := append(s.chain(),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: keepaliveTime, Timeout: keepaliveTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: minPingInterval, PermitWithoutStream: true}),
		grpc.MaxRecvMsgSize(MaxRecvMsgSize),
		grpc.MaxConcurrentStreams(MaxConcurrentStreams),
		// Fixed flow-control windows. With grpc-go's default (dynamic)
		// windows every data frame the server receives after a quiet
		// moment makes it ping the client to estimate the bandwidth-delay
		// product: at a thousand small requests a second that is a ping,
		// its ack and two more syscalls per request on each side, for
		// windows that requests of this API never fill.
		grpc.InitialWindowSize(streamWindow),
		grpc.InitialConnWindowSize(connWindow),
		// Protobuf, plus PreEncoded messages sent as they are (fan-out).
		grpc.ForceServerCodecV2(newCodec()),
	)
	if opts.TLS != nil {
		serverOpts = append(serverOpts, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	if opts.StatsHandler != nil {
		serverOpts = append(serverOpts, grpc.StatsHandler(opts.StatsHandler))
	}
	s.grpc = grpc.NewServer(serverOpts...)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	// Overall health ("") starts NOT_SERVING like every service: readiness
	// flips it once Postgres answers and the schema is current.
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	return s, nil
}

// Register adds a service implementation and marks it NOT_SERVING until
// SetServing says otherwise. Call before Start.
func (s *Server) Register(desc *grpc.ServiceDesc, impl any) {
	s.grpc.RegisterService(desc, impl)
	s.services = append(s.services, desc.ServiceName)
	s.health.SetServingStatus(desc.ServiceName, healthpb.HealthCheckResponse_NOT_SERVING)
}

// Addr is the bound listen address.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Services lists the registered service names.
func (s *Server) Services() []string { return append([]string(nil), s.services...) }

// SetServing sets every registered service, and the overall status, to
// SERVING (true) or NOT_SERVING. After Drain begins it has no effect.
func (s *Server) SetServing(serving bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if serving {
		st = healthpb.HealthCheckResponse_SERVING
	}
	s.health.SetServingStatus("", st)
	for _, name := range s.services {
		s.health.SetServingStatus(name, st)
	}
}

// OpenStreams is the number of server streams in progress (a node stat).
func (s *Server) OpenStreams() int64 { return s.streams.Load() }

// Name implements lifecycle.Component.
func (s *Server) Name() string { return "grpc" }

// Start serves in the background.
func (s *Server) Start(context.Context) error {
	s.startOnce.Do(func() {
		s.log.Info("gRPC listening", sblog.Addr(s.Addr()))
		go func() {
			defer close(s.served)
			if err := s.grpc.Serve(s.lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				s.failed <- fmt.Errorf("serve gRPC: %w", err)
			}
		}()
	})
	return nil
}

// Failed implements lifecycle.Failer.
func (s *Server) Failed() <-chan error { return s.failed }

// Drain is the first half of shutdown, run before any other component stops:
// health reports NOT_SERVING (and stays so), the node keeps serving for the
// shutdown delay, then open streams are told to end. Safe to call repeatedly.
func (s *Server) Drain(ctx context.Context) error {
	s.health.Shutdown()
	if s.drainCtx.Err() == nil && s.delay > 0 {
		s.log.Info("health NOT_SERVING; waiting before draining", zap.Duration("delay", s.delay))
		t := time.NewTimer(s.delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	s.drain()
	return nil
}

// Stop drains (if not already done), then stops gracefully, waiting for
// in-flight RPCs until ctx is done, and finally forces the rest closed.
func (s *Server) Stop(ctx context.Context) error {
	_ = s.Drain(ctx)
	s.stopOnce.Do(func() {
		done := make(chan struct{})
		go func() {
			s.grpc.GracefulStop()
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			s.log.Warn("grace period over; closing remaining RPCs")
			s.grpc.Stop()
			<-done
		}
		_ = s.lis.Close() // when never started, Serve did not own it
	})
	return nil
}
