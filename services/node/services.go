package node

import (
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/grpcserver"
	sblog "github.com/switchboard/switchboard/pkg/logging"
	"github.com/switchboard/switchboard/pkg/pgnotify"
	"github.com/switchboard/switchboard/services/admin"
	"github.com/switchboard/switchboard/services/gateway"
	"github.com/switchboard/switchboard/services/gateway/dashboard"
	"github.com/switchboard/switchboard/services/ingest"
	"github.com/switchboard/switchboard/services/ingest/sources"
	"github.com/switchboard/switchboard/services/queue"
	"github.com/switchboard/switchboard/services/realtime"
	"github.com/switchboard/switchboard/services/registry"
)

// The modules' build functions (see the table in modules.go). Each builds
// its part from what the modules before it left in the assembly, registers
// what it serves, and adds what it runs.

// buildNotifier: one listen connection and one sender for the node, which
// the queue, ingest and realtime subscribe to before the node starts it.
func (a *assembly) buildNotifier() error {
	a.notifier = pgnotify.New(a.log, a.pool, pgnotify.Options{})
	a.serve(a.notifier)
	return nil
}

// buildLifecycleEvents: where the queue and ingest publish their lifecycle
// events. A node that runs realtime uses its Server (local subscribers at
// once, the other nodes over the transport); any other node, e.g. `serve
// queue` in a split topology, gets a publisher-only part that sends them
// over the same transport to the realtime nodes: the node's notifier, or
// outgoing mesh links (it accepts none: it runs no realtime).
func (a *assembly) buildLifecycleEvents() error {
	if a.realtime != nil {
		a.events = lifecycleEvents{server: a.realtime}
		return nil
	}
	o := realtime.SystemPublisherOptions{NodeID: a.cfg.Cluster.NodeID, Notifier: a.notifier}
	if a.cfg.Realtime.EphemeralTransport == realtime.TransportMesh {
		o.Mesh = &realtime.MeshOptions{
			Secret:      []byte(a.cfg.Realtime.ClusterSecret),
			DialOptions: append(a.tls.dial(""), a.tracing.DialOptions()...),
		}
	}
	p, err := realtime.NewSystemPublisher(a.log.With(sblog.Component("lifecycle-events")), a.pool, o)
	if err != nil {
		return fmt.Errorf("%s: %w", config.EnvClusterSecret, err)
	}
	a.serve(p.Components()...)
	a.events = lifecycleEvents{publisher: p}
	return nil
}

// buildTodos: the writer the queue and ingest share, so every todo change
// announces itself the same way (buildLifecycleEvents).
func (a *assembly) buildTodos() error {
	o := queue.TodosOptions{HotPool: a.hotPool, Metrics: a.metrics.Queue, OnChange: todoLifecycle(a.events)}
	a.todos = queue.NewTodos(a.pool, a.notifier, o)
	return nil
}

// buildSources: the owner of endpoints and adapters, which announces its
// endpoint changes through the node's notifier, so every node's webhook
// edge drops what it cached of a changed endpoint at once.
func (a *assembly) buildSources() error {
	rules := make([]sources.AllowRule, len(a.cfg.Ingest.AdapterAllow))
	shown := make([]string, len(rules))
	for i, e := range a.cfg.Ingest.AdapterAllow {
		rules[i], shown[i] = sources.AllowRule(e), e.String()
	}
	if len(rules) == 0 {
		a.log.Info(config.EnvAdapterAllow + " is not set: pull adapters may connect nowhere, so none can be created or run")
	} else {
		a.log.Info("pull adapters may connect to "+config.EnvAdapterAllow, zap.Strings("allow", shown))
	}
	a.sources = sources.New(a.pool, a.cfg.Ingest.SealingKeys, sources.NewAllowlist(rules, nil))
	a.sources.UseNotifier(a.notifier)
	return nil
}

func (a *assembly) buildRegistry() error {
	s := registry.New(a.log.With(sblog.Service(registry.Name)), a.pool, registry.Options{
		NodeID:             a.cfg.Cluster.NodeID,
		Status:             a.health.Status,
		SinceLastHeartbeat: a.health.member.SinceLastHeartbeat,
		WatchInterval:      min(a.cfg.Cluster.HeartbeatInterval, time.Second),
	})
	a.grpc.Register(s.Desc(), s)
	return nil
}

func (a *assembly) buildQueue() error {
	q := queue.New(a.log.With(sblog.Service(queue.Name)), a.pool, queue.Options{Todos: a.todos, Notifier: a.notifier, Metrics: a.metrics})
	a.grpc.Register(q.Desc(), q)
	a.serve(q.Components()...)
	a.onDrain(q.Drain)
	return nil
}

func (a *assembly) buildIngest() error {
	o := ingest.Options{
		SealingKeys: a.cfg.Ingest.SealingKeys, NodeID: a.cfg.Cluster.NodeID, HotPool: a.hotPool,
		Todos: a.todos, Sources: a.sources, Metrics: a.metrics, Received: eventLifecycle(a.events),
	}
	s := ingest.New(a.log.With(sblog.Service(ingest.Name)), a.pool, o)
	a.grpc.Register(s.Desc(), s)
	hooks := s.HookHandler()
	a.mux.Handle(ingest.HookPattern, hooks)
	a.mux.Handle(ingest.HookGetPattern, hooks) // providers' handshakes
	a.serve(s.Components()...)
	return nil
}

func (a *assembly) buildRealtime() error {
	l, o := a.log.With(sblog.Service(realtime.Name)), realtime.Options{NodeID: a.cfg.Cluster.NodeID, Notifier: a.notifier, Metrics: a.metrics}
	var err error
	if a.cfg.Realtime.EphemeralTransport == realtime.TransportMesh {
		mo := realtime.MeshOptions{
			Secret:      []byte(a.cfg.Realtime.ClusterSecret),
			DialOptions: append(a.tls.dial(""), a.tracing.DialOptions()...), RequireClientCert: a.cfg.TLS.MeshClientCerts(),
		}
		if a.realtime, err = realtime.NewMesh(l, a.pool, o, mo); err != nil {
			return fmt.Errorf("%s: %w", config.EnvClusterSecret, err)
		}
	} else {
		a.realtime = realtime.New(l, a.pool, o)
	}
	a.realtime.Register(a.grpc)
	a.serve(a.realtime.Components()...)
	return nil
}

func (a *assembly) buildAdmin() error {
	s := admin.New(a.log.With(sblog.Service(admin.Name)), a.pool, a.identity, a.sources)
	a.grpc.Register(s.Desc(), s)
	return nil
}

// buildGateway: the REST/JSON edge, the dashboard and the MCP endpoint. It dials each
// service where routing.go says (its own gRPC address for what the node
// runs, so streams work as they do remotely; the registry's live nodes for
// the rest), and forwards webhooks when the node runs no ingest. It checks
// the caller with the node's authenticator (and its cache) before reading
// a body, and caps bodies at what the gRPC server would accept.
func (a *assembly) buildGateway() error {
	upstreams := a.gatewayUpstreams()
	gw, err := gateway.New(a.ctx, "", gateway.Options{
		Authenticate:    a.authenticate,
		MaxBodyBytes:    a.cfg.HTTPLimits.MaxBody,
		MaxRequestBytes: grpcserver.MaxRecvMsgSize,
		Upstreams:       upstreams,
		Dial:            a.tracing.DialOptions(),
	})
	if err != nil {
		return err
	}
	if !slices.Contains(a.services, ingest.Name) {
		a.forwardHooks()
	}
	a.closers = append(a.closers, gw.Close)
	a.httpClosed = append(a.httpClosed, gw.Close)
	a.mux.Handle("/", gw.Handler())
	// The admin dashboard: "/" exactly and its assets; every other path is
	// a gateway route.
	dash := dashboard.Handler()
	a.mux.Handle("/{$}", dash)
	a.mux.Handle(dashboard.AssetPrefix, dash)
	return a.mountMCP(upstreams)
}
