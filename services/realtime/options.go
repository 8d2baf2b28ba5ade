package realtime

import (
	"time"

	"github.com/switchboard/switchboard/pkg/metrics"
	"github.com/switchboard/switchboard/pkg/pgnotify"
	"github.com/switchboard/switchboard/services/realtime/internal/wire"
)

// Transports for ephemeral events (REALTIME_EPHEMERAL_TRANSPORT).
const (
	// TransportNotify carries each ephemeral event inside a pg_notify
	// payload (phase 1).
	TransportNotify = "notify"
	// TransportMesh carries them over direct node-to-node gRPC links
	// (phase 2, services/realtime/internal/mesh).
	TransportMesh = "mesh"
)

// Size limits of a serialized payload (the contract's PublishRequest.payload).
const (
	MaxDurablePayload = 64 << 10
	// MaxEphemeralPayload keeps an ephemeral event inside one NOTIFY payload
	// (8000 bytes) with its envelope; the mesh keeps the same limit so the
	// Publish API does not depend on the transport.
	MaxEphemeralPayload = 7 << 10
	// maxNotifyPayload is PostgreSQL's cap on a NOTIFY payload, less one
	// (7999 bytes).
	maxNotifyPayload = pgnotify.MaxPayload
)

// Options tune the service. Zero fields take the defaults in withDefaults.
type Options struct {
	// NodeID is this node's registry id: it marks ephemeral events this node
	// published (so it ignores them coming back) and owns presence rows.
	NodeID string
	// Transport carries ephemeral events to other nodes. Nil: pg_notify
	// (TransportNotify). The mesh is built by the node and passed here.
	Transport wire.Transport
	// Notifier is the node's shared notifier: it sends the coalesced
	// "new durable events" notifications (and, with the notify transport,
	// the ephemeral events) and receives them on its listen connection. The
	// caller runs it, starting it after New and before Components. Nil: the
	// service builds a private one over its pool and includes it in
	// Components (standalone use, tests).
	Notifier *pgnotify.Notifier
	// Keepalive is how long a stream may be idle before a Keepalive is sent
	// (the contract says 15 s; tests shorten it).
	Keepalive time.Duration
	// Buffer is how many events may wait for one subscriber; a subscriber
	// that falls this far behind is ended with RESOURCE_EXHAUSTED and
	// resumes with after_id, so it never slows the others.
	Buffer int
	// PollInterval is how often the durable reader looks for new rows
	// without a notification (NOTIFY is an accelerator, not the source of
	// truth: a lost one costs at most this much latency).
	PollInterval time.Duration
	// ReadGap is the least time between two reads of the table by the
	// reader: events that commit within it are read, and reach each
	// subscriber, together (SubscribeRequest.max_batch). It adds at most
	// this much latency, and none to the first event after a quiet spell.
	ReadGap time.Duration
	// EphemeralGap is the least time between two hand-overs of ephemeral
	// events to the subscribers (pump.go), as ReadGap is for durable ones.
	EphemeralGap time.Duration
	// HoleRecheck is how soon the reader looks again when the ids it read
	// have a hole that an in-progress publish may still fill.
	HoleRecheck time.Duration
	// NotifyWindow coalesces "new durable events" notifications: at most
	// one per window.
	NotifyWindow time.Duration
	// Metrics, when set, is the node's registry: subscribers, deliveries,
	// drops and cut-offs, replays, the reader's lag and the mesh's links
	// (those two sampled every MetricsInterval, default 15 s). Nil records
	// nothing.
	Metrics         *metrics.Registry
	MetricsInterval time.Duration
	// ReplayPage is the page size of a subscriber's replay.
	ReplayPage int
	// RetentionInterval, RetentionBatch: the pruning loop of
	// retention.realtime_events.
	RetentionInterval time.Duration
	RetentionBatch    int
	// PresenceInterval is how often a node sweeps the presence rows of
	// nodes that are gone (sending their leave events) and checks that its
	// own rows survived (a Postgres crash empties UNLOGGED tables).
	PresenceInterval time.Duration
	// LimitsInterval is how often the setting realtime.limits is read: how
	// soon a change of it applies on a running node. Until the first read
	// the defaults apply.
	LimitsInterval time.Duration
	// EphemeralQueue bounds ephemeral events waiting for the notifier's
	// sender, and those waiting for the pump; past it they are dropped and
	// counted (ephemeral delivery is best effort).
	EphemeralQueue int
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.NodeID == "" {
		o.NodeID = "local"
	}
	def(&o.Keepalive, 15*time.Second)
	def(&o.MetricsInterval, 15*time.Second)
	def(&o.PollInterval, time.Second)
	def(&o.HoleRecheck, time.Millisecond)
	def(&o.ReadGap, 2*time.Millisecond)
	def(&o.EphemeralGap, 2*time.Millisecond)
	def(&o.NotifyWindow, time.Millisecond)
	def(&o.RetentionInterval, time.Minute)
	def(&o.PresenceInterval, 2*time.Second)
	def(&o.LimitsInterval, 2*time.Second)
	defInt(&o.Buffer, 1024)
	defInt(&o.ReplayPage, 500)
	defInt(&o.RetentionBatch, 5000)
	defInt(&o.EphemeralQueue, 8192)
	return o
}
