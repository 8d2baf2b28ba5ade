package mesh

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	grpcpeer "google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	meshv1 "github.com/switchboard/switchboard/gen/switchboard/mesh/v1"
	"github.com/switchboard/switchboard/services/realtime/internal/wire"
)

// Metadata keys of a link. The dialer sends both; the receiver answers with
// its node id in the response headers once it has accepted the link, which
// is how the dialer knows the link is live and reached the node the
// registry named (an endpoint can be reused by another node).
const (
	SecretHeader = "x-switchboard-cluster-secret"
	NodeIDHeader = "x-switchboard-node-id"
)

// MaxPayload is the largest payload a receiver accepts. Publishers are held
// to a smaller cap (realtime.MaxEphemeralPayload); this one only keeps a
// misbehaving peer from handing subscribers arbitrarily large messages.
const MaxPayload = 64 << 10

// Relay serves one inbound link. After the secret checks out it sends its
// node id in the headers, then delivers every valid message until the
// dialer closes the link (answered with the count delivered), the dialer
// goes away, the gRPC server drains, or Stop.
//
// An invalid message is dropped (logged at debug, counted in Stats.Invalid)
// and the link carries on: the dialer is an authenticated node, so a bad
// message means version skew or a bug on its side, and ending the link
// would lose every good event queued behind it only for the dialer to
// redial and do the same again.
func (m *Mesh) Relay(stream grpc.ClientStreamingServer[meshv1.RelayRequest, meshv1.RelayResponse]) error {
	ctx := stream.Context()
	if !m.authorized(ctx) {
		// Say nothing about what was wrong (missing, malformed, mismatched).
		return status.Error(codes.Unauthenticated, "missing or invalid credentials")
	}
	m.mu.Lock()
	if m.stopped || ctx.Err() != nil {
		m.mu.Unlock()
		return status.Error(codes.Unavailable, "node is shutting down")
	}
	m.links.Add(1)
	m.mu.Unlock()
	if err := stream.SendHeader(metadata.Pairs(NodeIDHeader, m.o.NodeID)); err != nil {
		m.links.Done()
		return err
	}
	from := firstValue(ctx, NodeIDHeader)

	// Recv cannot be interrupted, so it runs on its own goroutine while this
	// one watches for the reasons to end the link early; returning ends the
	// stream, which makes that Recv return.
	var delivered atomic.Int64
	done := make(chan error, 1)
	go func() {
		defer m.links.Done()
		done <- m.receive(stream, from, &delivered)
	}()
	select {
	case err := <-done:
		if !errors.Is(err, io.EOF) {
			return err
		}
		return stream.SendAndClose(&meshv1.RelayResponse{Received: delivered.Load()})
	case <-ctx.Done():
		// The dialer left (nobody hears this), or pkg/grpcserver is
		// draining (it answers UNAVAILABLE in our place).
		return status.FromContextError(ctx.Err()).Err()
	case <-m.closed.Done():
		return status.Error(codes.Unavailable, "node is shutting down")
	}
}

// receive reads one link until it ends (io.EOF when the dialer closed it).
func (m *Mesh) receive(stream grpc.ClientStreamingServer[meshv1.RelayRequest, meshv1.RelayResponse],
	from string, delivered *atomic.Int64,
) error {
	for {
		req, err := stream.Recv()
		if err != nil {
			return err
		}
		if req.GetOriginNodeId() == m.o.NodeID {
			continue // our own event: delivered locally when it was published
		}
		e, err := decode(req)
		if err != nil {
			m.invalid.Add(1)
			m.log.Debug("mesh dropped an invalid message", zap.String("peer_node_id", from), zap.Error(err))
			continue
		}
		m.o.Deliver(e)
		delivered.Add(1)
		m.received.Add(1)
	}
}

// authorized compares the link's secret with ours in constant time. Both
// sides are hashed first so the comparison does not reveal the length.
// With RequireClientCert the link must also have come with a verified
// client certificate.
func (m *Mesh) authorized(ctx context.Context) bool {
	if m.o.RequireClientCert && !verifiedClient(ctx) {
		return false
	}
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(SecretHeader)
	if len(vals) != 1 {
		return false
	}
	sum := sha256.Sum256([]byte(vals[0]))
	return subtle.ConstantTimeCompare(sum[:], m.secretSum[:]) == 1
}

// verifiedClient reports whether the call's connection is TLS with a client
// certificate the server verified against its client CAs.
func verifiedClient(ctx context.Context) bool {
	p, ok := grpcpeer.FromContext(ctx)
	if !ok {
		return false
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	return ok && len(info.State.VerifiedChains) > 0
}

func firstValue(ctx context.Context, key string) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// decode validates a message from a peer and turns it into an event.
func decode(req *meshv1.RelayRequest) (wire.Ephemeral, error) {
	var e wire.Ephemeral
	if req.GetOriginNodeId() == "" {
		return e, errors.New("origin_node_id is empty")
	}
	human, err := uuid.Parse(req.GetHumanId())
	if err != nil {
		return e, fmt.Errorf("human_id: %w", err)
	}
	if req.GetChannel() == "" {
		return e, errors.New("channel is empty")
	}
	if a := req.GetAudience(); a != "" {
		if id, ok := strings.CutPrefix(a, "agent:"); !ok || uuid.Validate(id) != nil {
			return e, errors.New(`audience is neither empty nor "agent:<uuid>"`)
		}
	}
	p := req.GetPayload()
	if len(p) > MaxPayload {
		return e, fmt.Errorf("payload is %d bytes, over %d", len(p), MaxPayload)
	}
	if t := bytes.TrimLeft(p, " \t\r\n"); len(t) == 0 || t[0] != '{' || !json.Valid(p) {
		return e, errors.New("payload is not a JSON object")
	}
	// A missing timestamp is tolerated (receipt time stands in); a
	// malformed one is not.
	created := time.Now()
	if ts := req.GetCreatedAt(); ts != nil {
		if err := ts.CheckValid(); err != nil {
			return e, fmt.Errorf("created_at: %w", err)
		}
		created = ts.AsTime()
	}
	return wire.Ephemeral{
		Origin:      req.GetOriginNodeId(),
		HumanID:     human,
		Channel:     req.GetChannel(),
		Kind:        req.GetKind(),
		Payload:     json.RawMessage(p), // a fresh message per Recv: no copy needed
		PublishedBy: req.GetPublishedBy(),
		CreatedAt:   created,
		Audience:    req.GetAudience(),
	}, nil
}

// toRequest is e as it goes on the wire. The origin is always this node:
// a link carries only its dialer's events.
func (m *Mesh) toRequest(e wire.Ephemeral) *meshv1.RelayRequest {
	req := &meshv1.RelayRequest{
		OriginNodeId: m.o.NodeID,
		HumanId:      e.HumanID.String(),
		Channel:      e.Channel,
		Kind:         e.Kind,
		Payload:      e.Payload,
		PublishedBy:  e.PublishedBy,
		Audience:     e.Audience,
	}
	if !e.CreatedAt.IsZero() {
		req.CreatedAt = timestamppb.New(e.CreatedAt)
	}
	return req
}
