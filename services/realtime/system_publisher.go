package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/lifecycle"
	"github.com/switchboard/switchboard/pkg/pgnotify"
	"github.com/switchboard/switchboard/services/realtime/internal/mesh"
	"github.com/switchboard/switchboard/services/realtime/internal/store"
	"github.com/switchboard/switchboard/services/realtime/internal/wire"
)

// SystemPublisher publishes lifecycle events (System) from a node that runs
// a service with lifecycle events (queue, ingest) but not realtime: the
// split topology, where the subscribers are on other nodes. It sends each
// event over the ephemeral transport the realtime nodes receive on, with
// the envelope Server.System uses, so subscribers cannot tell the two
// apart. It serves no subscriber and accepts no link.
type SystemPublisher struct {
	log      *zap.Logger
	store    *store.Store
	nodeID   string
	listened listenedSet
	refresh  *lifecycle.Loop

	out  *pgnotify.Queue // transport notify
	mesh *mesh.Mesh      // transport mesh: outgoing links only
}

// SystemPublisherOptions configure NewSystemPublisher.
type SystemPublisherOptions struct {
	// NodeID is this node's registry id (the events' origin).
	NodeID string
	// Notifier is the node's shared notifier, which the node runs (started
	// before Components, stopped after them). Required with the notify
	// transport (Mesh nil).
	Notifier *pgnotify.Notifier
	// Mesh, when set, sends over the node-to-node mesh instead of NOTIFY
	// (REALTIME_EPHEMERAL_TRANSPORT=mesh).
	Mesh *MeshOptions
	// PresenceInterval is how often the set of listened system channels is
	// read from the presence table (as a realtime node does it).
	PresenceInterval time.Duration
	// EphemeralQueue bounds the events waiting for the notifier's sender;
	// past it they are dropped and counted.
	EphemeralQueue int
}

// NewSystemPublisher returns a publisher of lifecycle events over pool; its
// Components must run for it to send anything (until the first refresh of
// the listened channels, nothing is listened).
func NewSystemPublisher(log *zap.Logger, pool *pgxpool.Pool, o SystemPublisherOptions) (*SystemPublisher, error) {
	d := Options{NodeID: o.NodeID, PresenceInterval: o.PresenceInterval, EphemeralQueue: o.EphemeralQueue}.withDefaults()
	p := &SystemPublisher{log: log, store: store.New(pool), nodeID: d.NodeID}
	p.refresh = lifecycle.NewLoop(Name+"-system-listened", d.PresenceInterval, func(ctx context.Context) {
		p.listened.refresh(ctx, p.log, p.store)
	})
	if o.Mesh != nil {
		m, err := mesh.New(mesh.Options{
			NodeID: d.NodeID, Secret: o.Mesh.Secret, Pool: pool, Log: log,
			DialOptions: o.Mesh.DialOptions,
			// Nothing arrives: the node does not register MeshService, and
			// realtime nodes dial only nodes that run realtime.
			Deliver: func(wire.Ephemeral) {},
		})
		if err != nil {
			return nil, err
		}
		p.mesh = m
		return p, nil
	}
	if o.Notifier == nil {
		return nil, errors.New("realtime: a system publisher on the notify transport needs the node's notifier")
	}
	p.out = o.Notifier.Queue(ephemeralChannel, d.EphemeralQueue)
	return p, nil
}

// Components are the publisher's background parts, to run after the node's
// notifier starts and stop before it: the mesh's links (with the mesh) and
// the refresh of the listened channels.
func (p *SystemPublisher) Components() []lifecycle.Component {
	if p.mesh != nil {
		return []lifecycle.Component{p.mesh, p.refresh}
	}
	return []lifecycle.Component{p.refresh}
}

// System publishes a service's lifecycle event as Server.System does, if a
// subscriber anywhere listens to the channel; otherwise it costs one map
// lookup and allocates nothing (fields is not called). It never blocks and
// never fails the caller.
func (p *SystemPublisher) System(human uuid.UUID, agent *uuid.UUID, channel, kind string, fields func() map[string]any) {
	if !p.listened.has(channelKey{human, channel}) {
		return
	}
	e, err := systemEvent(p.nodeID, human, agent, channel, kind, fields)
	if err != nil {
		logUnsent(p.log, channel, kind, err)
		return
	}
	// The size limit is the notify transport's, for both (as Server's
	// publishEphemeral keeps it).
	encoded, err := json.Marshal(e)
	if err != nil || len(encoded) > maxNotifyPayload {
		p.log.Debug("lifecycle event too large to send", zap.String("channel", channel))
		return
	}
	if p.mesh != nil {
		p.mesh.Broadcast(e)
		return
	}
	p.out.Send(string(encoded))
}
