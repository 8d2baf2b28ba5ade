package mesh

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	meshv1 "github.com/switchboard/switchboard/gen/switchboard/mesh/v1"
	"github.com/switchboard/switchboard/pkg/cluster"
	"github.com/switchboard/switchboard/pkg/lifecycle"
	sblog "github.com/switchboard/switchboard/pkg/logging"
	"github.com/switchboard/switchboard/services/realtime/internal/wire"
)

// MinSecretLen is the shortest cluster secret New accepts: 256 bits, so the
// secret cannot be guessed over the network.
const MinSecretLen = 32

// Options configure a Mesh. Zero durations and sizes take the defaults noted.
type Options struct {
	// NodeID is this node's registry id: the origin of every event it sends,
	// and the row it never dials.
	NodeID string
	// Secret is the cluster secret every node shares: at least MinSecretLen
	// bytes of printable ASCII, because it travels as a gRPC metadata value
	// (pass the configured string, or base64 of a binary key). A node
	// presents it on every link it dials and accepts only links that do.
	Secret []byte
	// Pool reads node_registry (through pkg/cluster, its owner).
	Pool *pgxpool.Pool
	// Log defaults to a no-op logger.
	Log *zap.Logger
	// Deliver receives each valid event from another node, on that link's
	// goroutine. It should return quickly: while it runs the link reads no
	// more, and the sender's queue fills and drops.
	Deliver func(wire.Ephemeral)
	// RefreshInterval is how often node_registry is read (default 1s): the
	// delay before a new node is dialed or a swept one dropped.
	RefreshInterval time.Duration
	// QueueSize bounds the events waiting for one peer (default 4096); past
	// it Broadcast drops for that peer.
	QueueSize int
	// DialOptions are appended to the mesh's own (insecure transport,
	// reconnect backoff, keepalive), so they can override them: a node with
	// TLS passes its transport credentials here.
	DialOptions []grpc.DialOption
	// RequireClientCert admits only inbound links whose dialer presented a
	// client certificate that the gRPC server verified (its TLS config has
	// client CAs, see pkg/tlsconfig.Server), on top of the secret.
	RequireClientCert bool
}

// Stats are the mesh's counters since New, for node stats and tests.
type Stats struct {
	// Peers is the number of live outgoing links.
	Peers int
	// Sent is events written to outgoing links.
	Sent int64
	// Received is events from other nodes handed to Deliver.
	Received int64
	// Dropped is per-peer losses on the sending side: the peer's queue was
	// full, or its link broke with events still queued.
	Dropped int64
	// Invalid is messages from peers that failed validation (not delivered).
	Invalid int64
}

// Fields are the stats as node_registry stats keys (cluster.Options.Stats).
func (s Stats) Fields() map[string]any {
	return map[string]any{
		"mesh_peers": s.Peers, "mesh_sent": s.Sent, "mesh_received": s.Received,
		"mesh_dropped": s.Dropped, "mesh_invalid": s.Invalid,
	}
}

// Mesh is this node's end of the mesh: the MeshService server (inbound
// links), one outgoing link per peer, and the registry refresh that decides
// the peers. It is a lifecycle.Component and a wire.Transport.
type Mesh struct {
	meshv1.UnimplementedMeshServiceServer

	o         Options
	log       *zap.Logger
	registry  *cluster.Store    // node_registry, read through its owner
	secret    string            // sent on outgoing links
	secretSum [sha256.Size]byte // compared against inbound ones
	loop      *lifecycle.Loop

	// closed is cancelled by Stop: outgoing links flush and close (or give
	// up dialing), inbound ones end with UNAVAILABLE. A context rather than
	// a channel so a dial can be tied to it with context.AfterFunc.
	closed   context.Context
	closeAll context.CancelFunc

	mu      sync.RWMutex
	started bool
	stopped bool
	peers   map[string]*peer
	// badEndpoints are registry endpoints that could not be dialed, so
	// each is logged once.
	badEndpoints map[string]string
	// links counts outgoing link goroutines and inbound receivers; Add only
	// under mu while !stopped, so it never races Stop's Wait.
	links sync.WaitGroup

	// refreshFailures is touched only by the refresh loop's goroutine.
	refreshFailures int

	sent, received, dropped, invalid atomic.Int64
}

var (
	_ meshv1.MeshServiceServer = (*Mesh)(nil)
	_ lifecycle.Component      = (*Mesh)(nil)
	_ wire.Transport           = (*Mesh)(nil)
)

// New returns an unstarted mesh. It starts nothing: inbound links are
// served as soon as the mesh is registered on a serving gRPC server,
// outgoing ones after Start.
func New(o Options) (*Mesh, error) {
	switch {
	case o.NodeID == "":
		return nil, errors.New("mesh: NodeID is required")
	case len(o.Secret) < MinSecretLen:
		return nil, errors.New("mesh: the cluster secret must be at least 32 bytes")
	case !printable(o.Secret):
		// Else every dial would fail with INTERNAL; better to refuse the boot.
		return nil, errors.New("mesh: the cluster secret must be printable ASCII (encode a binary key, e.g. base64)")
	case o.Pool == nil:
		return nil, errors.New("mesh: Pool is required")
	case o.Deliver == nil:
		return nil, errors.New("mesh: Deliver is required")
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = time.Second
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 4096
	}
	m := &Mesh{
		o:            o,
		log:          o.Log.With(sblog.Component("realtime-mesh")),
		secret:       string(o.Secret), // a copy: the caller may reuse its slice
		secretSum:    sha256.Sum256(o.Secret),
		registry:     cluster.NewStore(o.Pool),
		peers:        map[string]*peer{},
		badEndpoints: map[string]string{},
	}
	m.o.Secret = nil
	m.o.DialOptions = slices.Clone(o.DialOptions)
	// Not derived from any caller's context: it ends exactly when Stop says.
	m.closed, m.closeAll = context.WithCancel(context.Background())
	m.loop = lifecycle.NewLoop("realtime-mesh-refresh", o.RefreshInterval, m.refresh)
	return m, nil
}

// Desc is the gRPC service descriptor Mesh implements.
func (m *Mesh) Desc() *grpc.ServiceDesc { return &meshv1.MeshService_ServiceDesc }

// Name implements lifecycle.Component.
func (m *Mesh) Name() string { return "realtime-mesh" }

// Start begins reading node_registry and dialing peers; it returns at once.
func (m *Mesh) Start(ctx context.Context) error {
	m.mu.Lock()
	switch {
	case m.stopped:
		m.mu.Unlock()
		return errors.New("mesh: Start after Stop")
	case m.started:
		m.mu.Unlock()
		return nil
	}
	m.started = true
	m.mu.Unlock()
	return m.loop.Start(ctx)
}

// Stop ends every link: outgoing ones send what is queued and close,
// inbound ones end with UNAVAILABLE. It waits for the link goroutines until
// ctx is done, then cancels the rest and returns ctx's error. Safe before
// Start and more than once.
func (m *Mesh) Stop(ctx context.Context) error {
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return nil
	}
	m.stopped = true
	peers := m.peers // every peer there will be: reconcile adds none once stopped
	m.peers = map[string]*peer{}
	m.mu.Unlock()
	m.closeAll()
	loopErr := m.loop.Stop(ctx)

	done := make(chan struct{})
	go func() {
		m.links.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	for _, p := range peers {
		p.cancel() // forces the links still sending, if ctx ran out
	}
	return errors.Join(loopErr, err)
}

// Broadcast queues e for every peer with a live link and returns at once.
// A peer whose queue is full loses e (counted in Stats.Dropped); a peer
// without a live link is not sent it at all.
func (m *Mesh) Broadcast(e wire.Ephemeral) {
	req := m.toRequest(e) // one message shared by every link: sends only read it
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, p := range m.peers {
		if !p.live.Load() {
			continue
		}
		select {
		case p.queue <- req:
		default:
			m.drop(p.id, 1, "send queue full")
		}
	}
}

// Peers lists, sorted, the node ids this node has a live outgoing link to.
func (m *Mesh) Peers() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for id, p := range m.peers {
		if p.live.Load() {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Stats returns the counters.
func (m *Mesh) Stats() Stats {
	return Stats{
		Peers:    len(m.Peers()),
		Sent:     m.sent.Load(),
		Received: m.received.Load(),
		Dropped:  m.dropped.Load(),
		Invalid:  m.invalid.Load(),
	}
}

// drop counts n events lost for peer id, logging the first loss and then
// every thousandth so an overloaded peer does not flood the log.
func (m *Mesh) drop(id string, n int64, why string) {
	total := m.dropped.Add(n)
	if (total-n)/1000 != total/1000 || total == n {
		m.log.Warn("mesh dropped ephemeral events", zap.String("peer_node_id", id),
			zap.String("reason", why), zap.Int64("dropped_total", total))
	}
}

// printable reports whether b can be a gRPC metadata value as is.
func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}
