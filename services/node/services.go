package node

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/grpcserver"
	"github.com/switchboard/switchboard/pkg/lifecycle"
	sblog "github.com/switchboard/switchboard/pkg/logging"
	"github.com/switchboard/switchboard/pkg/pgnotify"
	"github.com/switchboard/switchboard/services/admin"
	"github.com/switchboard/switchboard/services/gateway"
	"github.com/switchboard/switchboard/services/ingest"
	"github.com/switchboard/switchboard/services/ingest/sources"
	"github.com/switchboard/switchboard/services/queue"
	"github.com/switchboard/switchboard/services/realtime"
	"github.com/switchboard/switchboard/services/registry"
)

// All is every service, in the order `serve all` starts them.
var All = []string{registry.Name, queue.Name, ingest.Name, realtime.Name, admin.Name, gateway.Name}

// ParseServices turns `all` or a comma-separated subset ("queue,gateway")
// into a de-duplicated list in canonical order.
func ParseServices(spec string) ([]string, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "all" {
		return slices.Clone(All), nil
	}
	want := map[string]bool{}
	for _, s := range strings.Split(spec, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(All, s) {
			return nil, fmt.Errorf("unknown service %q (want all or a comma-separated list of %s)", s, strings.Join(All, ", "))
		}
		want[s] = true
	}
	var out []string
	for _, s := range All {
		if want[s] {
			out = append(out, s)
		}
	}
	return out, nil
}

// pools are the node's connection pools; hot is nil unless the node serves
// the queue or ingest.
type pools struct{ main, hot *pgxpool.Pool }

// registered is what registerServices leaves for the node to run and mount.
type registered struct {
	// notifier is the node's one pgnotify.Notifier, nil unless the node
	// serves the queue or realtime (the services that subscribe to it).
	notifier   *pgnotify.Notifier
	background []lifecycle.Component
	// hooks serves ingest.HookPattern; nil unless the node serves ingest.
	hooks http.Handler
}

func registerServices(gs *grpcserver.Server, log *zap.Logger, p pools, cfg config.Config,
	services []string, h *health, identity *auth.Store,
) (out registered, err error) {
	// One notifier for the node over the main pool: both services subscribe
	// to it here, before the node starts it.
	if slices.Contains(services, realtime.Name) || slices.Contains(services, queue.Name) || slices.Contains(services, ingest.Name) {
		out.notifier = pgnotify.New(log, p.main, pgnotify.Options{})
	}
	// Realtime first: the queue and ingest publish their lifecycle events
	// through it. Then the queue: ingest tells it of the todos its events
	// create.
	var rt *realtime.Server
	if slices.Contains(services, realtime.Name) {
		l := log.With(sblog.Service(realtime.Name))
		o := realtime.Options{NodeID: cfg.Cluster.NodeID, Notifier: out.notifier}
		if cfg.Realtime.EphemeralTransport == realtime.TransportMesh {
			if rt, err = realtime.NewMesh(l, p.main, o, []byte(cfg.Realtime.ClusterSecret)); err != nil {
				return out, fmt.Errorf("%s: %w", config.EnvClusterSecret, err)
			}
		} else {
			rt = realtime.New(l, p.main, o)
		}
	}
	// The todo writer the queue and ingest share, so every new todo
	// announces itself the same way.
	var todos *queue.Todos
	if slices.Contains(services, queue.Name) || slices.Contains(services, ingest.Name) {
		o := queue.TodosOptions{HotPool: p.hot}
		if rt != nil {
			o.OnChange = todoLifecycle(rt)
		}
		todos = queue.NewTodos(p.main, out.notifier, o)
	}
	var q *queue.Server
	if slices.Contains(services, queue.Name) {
		q = queue.New(log.With(sblog.Service(queue.Name)), p.main, queue.Options{Todos: todos, Notifier: out.notifier})
	}
	for _, name := range services {
		l := log.With(sblog.Service(name))
		switch name {
		case registry.Name:
			s := registry.New(l, p.main, registry.Options{
				NodeID:             cfg.Cluster.NodeID,
				Status:             h.Status,
				SinceLastHeartbeat: h.member.SinceLastHeartbeat,
				WatchInterval:      min(cfg.Cluster.HeartbeatInterval, time.Second),
			})
			gs.Register(s.Desc(), s)
		case queue.Name:
			gs.Register(q.Desc(), q)
			out.background = append(out.background, q.Components()...)
		case ingest.Name:
			o := ingest.Options{SealingKeys: cfg.Ingest.SealingKeys, NodeID: cfg.Cluster.NodeID, HotPool: p.hot, Todos: todos}
			if rt != nil {
				o.Received = eventLifecycle(rt)
			}
			s := ingest.New(l, p.main, o)
			gs.Register(s.Desc(), s)
			out.hooks = s.HookHandler()
			out.background = append(out.background, s.Components()...)
		case realtime.Name:
			rt.Register(gs)
			out.background = append(out.background, rt.Components()...)
		case admin.Name:
			s := admin.New(l, p.main, identity, sources.New(p.main, cfg.Ingest.SealingKeys))
			gs.Register(s.Desc(), s)
		}
	}
	return out, nil
}
