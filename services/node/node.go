// Package node assembles one Switchboard process from the modules of the
// services it runs (modules.go): the gRPC server with those services, the
// HTTP edge, the pools and migrations, the shared parts (notifier, todo
// writer), readiness and membership, all under one lifecycle group whose
// order is the shutdown choreography (assembly.components). It is what
// `switchboard serve` runs; tests run it in-process the same way.
package node

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/httpserver"
	"github.com/switchboard/switchboard/pkg/lifecycle"
	sblog "github.com/switchboard/switchboard/pkg/logging"
)

// Node is a built, not yet running, Switchboard process.
type Node struct {
	cfg   config.Config
	log   *zap.Logger
	a     *assembly
	group *lifecycle.Group
}

// New wires a node running services (see ParseServices). It binds both
// listeners, so a busy port fails here, but starts nothing: Run does. On
// error it closes whatever it opened.
func New(ctx context.Context, cfg config.Config, log *zap.Logger, services []string, opts ...Option) (n *Node, err error) {
	log = log.With(sblog.NodeID(cfg.Cluster.NodeID))
	order, err := plan(services)
	if err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	tr, err := buildTracing(ctx, o, cfg.Cluster.NodeID)
	if err != nil {
		return nil, err
	}
	a := &assembly{ctx: ctx, cfg: cfg, log: log, services: services, tracing: tr}
	a.closers = append(a.closers, func() error { return tr.Stop(context.WithoutCancel(ctx)) })
	for _, name := range order {
		a.hot = a.hot || modules[name].hot
	}
	defer func() {
		if err != nil {
			a.undo()
		}
	}()
	for _, name := range order {
		if err := modules[name].build(a); err != nil {
			return nil, err
		}
	}
	a.serveClusterMetrics() // a background loop like the modules', stopped first
	limits := httpserver.Options{BodyReadTimeout: cfg.HTTPLimits.ReadTimeout, MaxConns: cfg.HTTPLimits.MaxConns}
	if a.http, err = httpserver.New(ctx, log, cfg.HTTP.Addr, a.tracing.HTTP(a.metrics.HTTP.Middleware(a.mux)), limits, a.httpClosed...); err != nil {
		return nil, err
	}
	if c := a.tls.httpServerTLS(); c != nil {
		a.http.UseTLS(c)
	}
	group := lifecycle.NewGroup(log, a.components()...)
	log.Info("node built", zap.Strings("services", services), zap.Strings("modules", order))
	return &Node{cfg: a.cfg, log: log, a: a, group: group}, nil
}

// Run starts the node and blocks until ctx is done (clean shutdown, nil) or a
// component fails. Shutdown takes at most the configured grace period, plus
// the shutdown delay.
func (n *Node) Run(ctx context.Context) error {
	err := n.group.Run(ctx, n.cfg.Shutdown.Delay+n.cfg.Shutdown.Grace)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil // interrupted while starting: a clean exit
	}
	return err
}

// GRPCAddr is the bound gRPC address.
func (n *Node) GRPCAddr() string { return n.a.grpc.Addr() }

// HTTPAddr is the bound HTTP address.
func (n *Node) HTTPAddr() string { return n.a.http.Addr() }

// Served is closed the first time the node reports SERVING (registered,
// schema current) with every part started, the HTTP edge included: from
// then on it answers requests. `serve --announce`
// prints the addresses then.
func (n *Node) Served() <-chan struct{} { return n.a.health.served }

// MetricsAddr is the bound address of the metrics listener
// (SWITCHBOARD_METRICS_ADDR); without one, /metrics is on HTTPAddr.
func (n *Node) MetricsAddr() string {
	if n.a.metricsHTTP == nil {
		return n.HTTPAddr()
	}
	return n.a.metricsHTTP.Addr()
}
