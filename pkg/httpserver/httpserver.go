// Package httpserver runs the node's HTTP edge (gateway routes, webhooks,
// dashboard) under the lifecycle contract, with the limits every route
// shares: header, body and idle deadlines and a connection cap.
package httpserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	sblog "github.com/switchboard/switchboard/pkg/logging"
)

// Server is an http.Server with a bound listener.
type Server struct {
	name     string
	log      *zap.Logger
	srv      *http.Server
	lis      net.Listener
	failed   chan error
	start    sync.Once
	stop     sync.Once
	onClosed []func() error
}

// Deadlines every route shares. There is no WriteTimeout: streaming routes
// (NDJSON subscriptions) hold a response open for as long as the subscriber
// stays. Request bodies get their own deadline (Options.BodyReadTimeout).
const (
	// headerTimeout bounds receiving a request's headers: a client trickling
	// them holds no connection for longer.
	headerTimeout = 10 * time.Second
	// idleTimeout closes a kept-alive connection that sends no next request.
	idleTimeout = 2 * time.Minute
)

// Options configure New. Zero values mean no limit.
type Options struct {
	// BodyReadTimeout bounds receiving one request body, counted from when
	// its handler starts: a read past it fails with a timeout error (the
	// handler answers 408) and the connection is closed after the answer.
	// Requests without a body are not affected.
	BodyReadTimeout time.Duration
	// MaxConns caps the connections served at once; further ones wait in
	// the listen backlog until one closes.
	MaxConns int
	// Name is the server's lifecycle and log name; default "http".
	Name string
}

// New binds addr and prepares to serve h. It starts no goroutines. onClosed
// functions run after the server has stopped (e.g. closing the gateway's
// client connection).
func New(ctx context.Context, log *zap.Logger, addr string, h http.Handler, o Options, onClosed ...func() error) (*Server, error) {
	lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen HTTP on %s: %w", addr, err)
	}
	if o.MaxConns > 0 {
		lis = newLimitListener(lis, o.MaxConns)
	}
	if o.Name == "" {
		o.Name = "http"
	}
	return &Server{
		name: o.Name,
		log:  log.With(sblog.Component(o.Name)),
		srv: &http.Server{
			Handler:           bodyDeadline(h, o.BodyReadTimeout),
			ReadHeaderTimeout: headerTimeout,
			IdleTimeout:       idleTimeout,
		},
		lis:      lis,
		failed:   make(chan error, 1),
		onClosed: onClosed,
	}, nil
}

// UseTLS makes the server speak HTTPS (HTTP/2 and HTTP/1.1) with cfg
// (pkg/tlsconfig.Server) instead of plain HTTP. Call it before Start.
func (s *Server) UseTLS(cfg *tls.Config) {
	s.srv.TLSConfig = cfg
	s.srv.ErrorLog = handshakeLog(s.log)
}

// Addr is the bound listen address.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Name implements lifecycle.Component.
func (s *Server) Name() string { return s.name }

// Start serves in the background.
func (s *Server) Start(context.Context) error {
	s.start.Do(func() {
		s.log.Info("HTTP listening", sblog.Addr(s.Addr()))
		go func() {
			serve := s.srv.Serve
			if s.srv.TLSConfig != nil {
				// The certificate comes from TLSConfig.GetCertificate.
				serve = func(l net.Listener) error { return s.srv.ServeTLS(l, "", "") }
			}
			if err := serve(s.lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.failed <- fmt.Errorf("serve HTTP: %w", err)
			}
		}()
	})
	return nil
}

// Failed implements lifecycle.Failer.
func (s *Server) Failed() <-chan error { return s.failed }

// Stop stops accepting, waits for in-flight requests until ctx is done, then
// closes what is left.
func (s *Server) Stop(ctx context.Context) error {
	var errs []error
	s.stop.Do(func() {
		if err := s.srv.Shutdown(ctx); err != nil {
			s.log.Warn("grace period over; closing remaining HTTP connections")
			_ = s.srv.Close()
		}
		_ = s.lis.Close()
		for _, f := range s.onClosed {
			if err := f(); err != nil {
				errs = append(errs, err)
			}
		}
	})
	return errors.Join(errs...)
}
