// Package realtime fans events out to live subscribers over gRPC server
// streams (it replaces WebSockets), in two tiers:
//
//   - Durable events are rows in realtime_events (a node's concurrent
//     publishes share one insert: publisher.go). After the insert commits,
//     a coalesced pg_notify tells every node "there are new rows" (never the
//     payload: NOTIFY caps payloads at 8000 bytes, takes a cluster-wide lock
//     at commit and replays nothing to a listener that was away). Each node
//     reads the new rows once, in id order (reader.go explains holes), and
//     offers them to its matching subscribers. A subscriber resumes with
//     after_id: the table is the source of truth.
//   - Ephemeral events (typing, presence, cursors) never touch a table: they
//     reach this node's subscribers at once and the other nodes through a
//     transport — pg_notify with the payload (Options.Transport nil), or the
//     node-to-node mesh (internal/mesh). The Publish API is the same for both.
//
// Each node is broadcast-and-discard: one listen connection (the node's
// pgnotify.Notifier, shared with the queue), one reader, and
// a hub that offers each event to the local subscribers of its (tenant,
// channel) without ever waiting for one (a subscriber that falls behind is
// cut off and resumes). Presence rows (UNLOGGED) say who listens where,
// cluster-wide; a node's rows go when the registry sweeps it. Channels
// belong to the credential's human: a token never sees another tenant's.
package realtime

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/lifecycle"
	"github.com/switchboard/switchboard/pkg/pgnotify"
	"github.com/switchboard/switchboard/services/realtime/internal/mesh"
	"github.com/switchboard/switchboard/services/realtime/internal/store"
	"github.com/switchboard/switchboard/services/realtime/internal/wire"
)

// Name is the service's name in `switchboard serve` and in logs.
const Name = "realtime"

// Server implements realtimev1.RealtimeServiceServer.
type Server struct {
	realtimev1.UnimplementedRealtimeServiceServer

	log   *zap.Logger
	store *store.Store
	opts  Options

	hub       *hub
	reader    *reader
	pump      *pump
	pumping   *lifecycle.Goroutines // runs pump
	publisher *publisher            // durable inserts' group commit (publisher.go)
	relay     *lifecycle.Goroutines
	loops     []lifecycle.Component // presence upkeep, retention, realtime.limits
	limiter   *publishLimiter       // realtime.limits per tenant (limits.go)
	presence  presenceSet
	listened  listenedSet

	// ready is closed once the reader's cursor is set (relay.startReader).
	ready chan struct{}

	// durable coalesces "new durable events up to newestID" (relay.go);
	// ownNotifier is the private notifier behind it when Options.Notifier
	// was nil (nil otherwise: the node runs the shared one).
	durable     *pgnotify.Coalescer
	newestID    atomic.Int64
	ownNotifier *pgnotify.Notifier

	transport    wire.Transport  // Options.Transport (the mesh), or nil:
	ephemeralOut *pgnotify.Queue // pg_notify, when no transport was given
	mesh         *mesh.Mesh      // set by NewMesh
}

// New returns the realtime service over pool. Its Components must run for
// anything to be delivered.
func New(log *zap.Logger, pool *pgxpool.Pool, opts Options) *Server {
	o := opts.withDefaults()
	st := store.New(pool)
	s := &Server{log: log, store: st, opts: o, hub: newHub(o.Metrics.RealtimeSeries()), ready: make(chan struct{}), limiter: newPublishLimiter()}
	s.reader = newReader(log, st, s.hub, durableEvent, o)
	s.pump = newPump(s.hub, o.EphemeralGap, o.EphemeralQueue, func() { s.hub.m.Dropped(false) })
	s.pumping = s.pump.component()
	s.publisher = s.newPublisher()
	s.transport = o.Transport
	// After the reader and the transport: it subscribes the reader, and
	// the ephemeral channel only when no other transport was given.
	s.useNotifier(log, pool, o.Notifier)
	s.relay = (&relay{s: s}).component()
	s.loops = []lifecycle.Component{
		lifecycle.NewLoop(Name+"-presence", o.PresenceInterval, s.presenceTick),
		lifecycle.NewLoop(Name+"-retention", o.RetentionInterval, lifecycle.Warned(log, "realtime retention failed", s.PruneOnce)),
		lifecycle.NewLoop(Name+"-limits", o.LimitsInterval, s.refreshLimits),
	}
	if o.Metrics != nil {
		s.loops = append(s.loops, lifecycle.NewLoop(Name+"-metrics", o.MetricsInterval,
			lifecycle.Warned(log, "realtime metrics sample failed", s.SampleMetrics)))
	}
	return s
}

// Desc is the gRPC service descriptor Server implements.
func (s *Server) Desc() *grpc.ServiceDesc { return &realtimev1.RealtimeService_ServiceDesc }

// Components are the service's background parts, to run in the node's
// lifecycle group before the gRPC server serves, in this order: the private
// notifier when Options.Notifier was nil (with a shared one the node runs
// it, before these), the mesh's links, the durable publishes' group commit
// (stopped after the reader and before the notifier: its last flush still
// marks its ids), the reader, the ephemeral pump, presence upkeep,
// retention and the reading of realtime.limits.
func (s *Server) Components() []lifecycle.Component {
	out := []lifecycle.Component{}
	if s.ownNotifier != nil {
		out = append(out, s.ownNotifier)
	}
	if s.mesh != nil {
		out = append(out, s.mesh)
	}
	return append(append(out, s.publisher, s.relay, s.pumping), s.loops...)
}

// DeliverRemote hands an ephemeral event that another node sent (over the
// mesh) to this node's subscribers.
func (s *Server) DeliverRemote(e wire.Ephemeral) { s.deliverRemote(e) }

// Subscribers is the number of open Subscribe streams on this node.
func (s *Server) Subscribers() int64 { return s.hub.count() }

// principal is who a request runs for: the tenant and the member name
// ("agent:<uuid>" or "human:<uuid>") that appears as published_by and in
// presence.
type principal struct {
	human  uuid.UUID
	member string
}

func caller(ctx context.Context) (principal, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return principal{}, fmt.Errorf("realtime: no verified principal: %w", apierr.ErrUnauthenticated)
	}
	member := "human:" + p.HumanID.String()
	if p.AgentID != nil {
		member = AgentMember(*p.AgentID)
	}
	return principal{human: p.HumanID, member: member}, nil
}
