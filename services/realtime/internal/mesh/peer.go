package mesh

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"

	meshv1 "github.com/switchboard/switchboard/gen/switchboard/mesh/v1"
)

// Redial backoff between failed links to one peer. A link that stayed up
// for healthyLink resets it, so a peer that restarts is redialed at once
// while one that keeps refusing is not hammered.
const (
	backoffMin  = 50 * time.Millisecond
	backoffMax  = 5 * time.Second
	healthyLink = time.Second
)

// peer is the outgoing side of one link: a bounded queue and the goroutine
// that drains it into a Relay stream, redialing when the stream breaks.
type peer struct {
	m        *Mesh
	id       string
	endpoint string
	conn     *grpc.ClientConn
	queue    chan *meshv1.RelayRequest
	live     atomic.Bool // a stream is open and the receiver accepted it
	cancel   context.CancelFunc
}

// dialOptions are the mesh's defaults, then the caller's. The connection
// backoff is capped well below gRPC's 120 s default: a peer that restarts
// should hear from us within seconds.
func (m *Mesh) dialOptions() []grpc.DialOption {
	bc := backoff.DefaultConfig
	bc.MaxDelay = backoffMax
	opts := []grpc.DialOption{
		// Plaintext unless DialOptions bring TLS (a node with TLS does:
		// SWITCHBOARD_TLS_*); the cluster secret authenticates the link
		// either way, and with RequireClientCert so does the certificate.
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bc, MinConnectTimeout: 5 * time.Second}),
		// An idle link sends nothing, so only pings notice a peer that
		// vanished without closing its connection. 30 s respects the
		// server's enforcement minimum (pkg/grpcserver).
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
	}
	return append(opts, m.o.DialOptions...)
}

// newPeer builds a peer; grpc.NewClient does not connect, so this is cheap
// and fails only on a malformed endpoint.
func (m *Mesh) newPeer(id, endpoint string) (*peer, error) {
	conn, err := grpc.NewClient(endpoint, m.dialOptions()...)
	if err != nil {
		return nil, fmt.Errorf("mesh: peer %s endpoint %q: %w", id, endpoint, err)
	}
	return &peer{m: m, id: id, endpoint: endpoint, conn: conn, queue: make(chan *meshv1.RelayRequest, m.o.QueueSize)}, nil
}

// run keeps a link to the peer open until ctx is cancelled (the peer was
// dropped, or Stop forces) or the mesh closes.
func (p *peer) run(ctx context.Context) {
	defer p.m.links.Done()
	defer func() { _ = p.conn.Close() }()
	client := meshv1.NewMeshServiceClient(p.conn)
	delay, failures := backoffMin, 0
	for {
		up, err := p.link(ctx, client)
		if n := p.discardQueue(); n > 0 {
			// Queued for a link that is gone; stale by the time a new one
			// opens (ephemeral events are about now).
			p.m.drop(p.id, int64(n), "link ended")
		}
		if ctx.Err() != nil || p.m.closed.Err() != nil {
			return
		}
		if !up.IsZero() {
			p.m.log.Info("mesh link ended; redialing", zap.String("peer_node_id", p.id), zap.Error(err))
			failures = 0
			if time.Since(up) >= healthyLink {
				delay = backoffMin
			}
		} else {
			// An unreachable peer does not land here (the dial waits for
			// it); a refusal does: a wrong secret, a peer without the
			// mesh, another node at that endpoint. Loud, but not every try.
			failures++
			if failures%20 == 1 {
				p.m.log.Warn("mesh link refused; retrying", zap.String("peer_node_id", p.id),
					zap.String("endpoint", p.endpoint), zap.Int("failures", failures), zap.Error(err))
			}
		}
		// Jitter spreads the redials of many nodes to one restarted peer.
		wait := delay/2 + rand.N(delay/2+1) //nolint:gosec // jitter, not a secret
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		case <-p.m.closed.Done():
			t.Stop()
			return
		}
		delay = min(2*delay, backoffMax)
	}
}

// link opens one Relay stream and drains the queue into it until the
// stream breaks, ctx is cancelled or the mesh closes. up is when the link
// went live (zero if it never did).
func (p *peer) link(ctx context.Context, client meshv1.MeshServiceClient) (up time.Time, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, SecretHeader, p.m.secret, NodeIDHeader, p.m.o.NodeID)
	// Until the link is live there is nothing to flush, so Stop abandons
	// the dial at once instead of waiting for an unreachable peer.
	// (The deferred call unregisters it on every path; later calls are no-ops.)
	abandon := context.AfterFunc(p.m.closed, cancel) //nolint:contextcheck // the mesh's stop signal, not a parent
	defer abandon()
	// WaitForReady: while the peer is unreachable the call waits for the
	// connection (which redials with its own backoff) instead of failing.
	stream, err := client.Relay(ctx, grpc.WaitForReady(true))
	if err != nil {
		return up, err
	}
	var resp meshv1.RelayResponse
	md, err := stream.Header()
	if err != nil || md == nil {
		// Refused before accepting (wrong secret, shutting down): the
		// status comes with the end of the stream.
		return up, errors.Join(err, stream.RecvMsg(&resp))
	}
	if got := md.Get(NodeIDHeader); len(got) != 1 || got[0] != p.id {
		return up, fmt.Errorf("endpoint %s answers as node %v, the registry says %s", p.endpoint, got, p.id)
	}
	if !abandon() {
		return up, context.Canceled // Stop came while the receiver was accepting
	}

	// The receiver answers only when the link ends, so a pending RecvMsg is
	// how an idle link notices that it broke.
	ended := make(chan struct{})
	var endErr error
	go func() {
		endErr = stream.RecvMsg(&resp)
		close(ended)
	}()
	defer func() {
		cancel()
		<-ended
	}()

	up = time.Now()
	p.live.Store(true)
	defer p.live.Store(false)
	for {
		select {
		case req := <-p.queue:
			if err := stream.Send(req); err != nil {
				// Send aborted the stream and says only io.EOF; the cause is
				// the status RecvMsg returns.
				<-ended
				if endErr != nil {
					return up, endErr
				}
				return up, err
			}
			p.m.sent.Add(1)
		case <-ended:
			return up, endErr
		case <-ctx.Done():
			return up, ctx.Err()
		case <-p.m.closed.Done():
			p.flush(stream)
			_ = stream.CloseSend()
			select {
			case <-ended:
			case <-ctx.Done():
			}
			return up, nil
		}
	}
}

// flush sends what is already queued, on Stop; Send gives up when Stop
// forces (ctx is cancelled).
func (p *peer) flush(stream grpc.ClientStreamingClient[meshv1.RelayRequest, meshv1.RelayResponse]) {
	for {
		select {
		case req := <-p.queue:
			if stream.Send(req) != nil {
				return
			}
			p.m.sent.Add(1)
		default:
			return
		}
	}
}

func (p *peer) discardQueue() int {
	n := 0
	for {
		select {
		case <-p.queue:
			n++
		default:
			return n
		}
	}
}
