package bench

import (
	"context"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
)

// rtHub is the fan-out the fake nodes share.
type rtHub struct {
	mu       sync.Mutex
	nextID   int64
	ordinals int
	durable  []*realtimev1.RealtimeEvent // every durable event, for replay
	subs     []*rtFakeSub
	dataAt   []time.Time // when each data event was published
	// sentNs is each data event's sent_ns stamp by (publisher, seq).
	sentNs     map[[2]int]int64
	maxSize    int
	allDurable bool
	// fault decides, per subscriber (in order of subscription) and data
	// event, whether to drop or duplicate the delivery.
	fault func(sub int, pub, seq float64) (drop, dup bool)
	// cutAfter ends subscription `sub`'s stream with RESOURCE_EXHAUSTED
	// (a subscriber that fell behind) once it is live and was sent n data
	// events, when the next one is due: the cut is a condition on what the
	// stream carried, not on when, and it always leaves an event the
	// subscriber must resume (after_id) to get. Probes do not count: how
	// many a run takes depends on how fast the streams come up.
	cutAfter map[int]int
	// linkDown drops every event from node `from` to subscribers on node
	// `to` while it answers true (a mesh link not up yet).
	linkDown func(from, to int) bool
}

type rtFakeSub struct {
	ordinal   int
	node      int
	channels  []string
	ephemeral bool
	ch        chan *realtimev1.RealtimeEvent
}

func newRTHub() *rtHub { return &rtHub{allDurable: true, sentNs: map[[2]int]int64{}} }

// rtFakeNode is one node's RealtimeService over the shared hub.
type rtFakeNode struct {
	realtimev1.UnimplementedRealtimeServiceServer
	hub                   *rtHub
	index                 int
	denySubscribe         bool
	subscribes, publishes atomic.Int64
}

func startRTNodes(t *testing.T, hub *rtHub, n int) ([]*rtFakeNode, []string) {
	t.Helper()
	authorized := func(ctx context.Context) error {
		md, _ := metadata.FromIncomingContext(ctx)
		if a := md.Get("authorization"); len(a) != 1 || a[0] != "Bearer sb_test" {
			return status.Error(codes.Unauthenticated, "bad token")
		}
		return nil
	}
	var nodes []*rtFakeNode
	var addrs []string
	for range n {
		var lc net.ListenConfig
		lis, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
		require.NoError(t, err)
		srv := grpc.NewServer(
			grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if err := authorized(ctx); err != nil {
					return nil, err
				}
				return h(ctx, req)
			}),
			grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
				if err := authorized(ss.Context()); err != nil {
					return err
				}
				return h(srv, ss)
			}))
		node := &rtFakeNode{hub: hub, index: len(nodes)}
		realtimev1.RegisterRealtimeServiceServer(srv, node)
		go func() { _ = srv.Serve(lis) }()
		t.Cleanup(srv.Stop)
		nodes = append(nodes, node)
		addrs = append(addrs, lis.Addr().String())
	}
	return nodes, addrs
}

func (f *rtFakeNode) Publish(_ context.Context, req *realtimev1.PublishRequest) (*realtimev1.PublishResponse, error) {
	if !channelName.MatchString(req.GetChannel()) {
		return nil, status.Error(codes.InvalidArgument, "channel")
	}
	f.publishes.Add(1)
	h := f.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	ev := &realtimev1.RealtimeEvent{Durable: req.GetDurable(), Channel: req.GetChannel(), Kind: req.GetKind(),
		Payload: req.GetPayload(), PublishedBy: "agent:bench", CreatedAt: timestamppb.Now()}
	if ev.GetDurable() {
		h.nextID++
		ev.Id = h.nextID
		h.durable = append(h.durable, ev)
	}
	fields := req.GetPayload().GetFields()
	if req.GetKind() == rtKindData {
		h.dataAt = append(h.dataAt, time.Now())
		raw, err := req.GetPayload().MarshalJSON()
		if err != nil {
			return nil, err
		}
		h.maxSize = max(h.maxSize, len(raw))
		if ns, err := strconv.ParseInt(fields[rtKeySent].GetStringValue(), 10, 64); err == nil {
			h.sentNs[[2]int{int(fields[rtKeyPub].GetNumberValue()), int(fields[rtKeySeq].GetNumberValue())}] = ns
		}
		h.allDurable = h.allDurable && req.GetDurable()
	}
	for _, s := range h.subs {
		if !slices.Contains(s.channels, ev.GetChannel()) || (!ev.GetDurable() && !s.ephemeral) {
			continue
		}
		drop, dup := false, false
		if h.fault != nil && req.GetKind() == rtKindData {
			drop, dup = h.fault(s.ordinal, fields[rtKeyPub].GetNumberValue(), fields[rtKeySeq].GetNumberValue())
		}
		if drop || (h.linkDown != nil && h.linkDown(f.index, s.node)) {
			continue
		}
		s.ch <- ev
		if dup {
			s.ch <- ev
		}
	}
	return &realtimev1.PublishResponse{Id: ev.GetId(), CreatedAt: ev.GetCreatedAt()}, nil
}

func (f *rtFakeNode) Subscribe(req *realtimev1.SubscribeRequest, stream grpc.ServerStreamingServer[realtimev1.SubscribeResponse]) error {
	if f.denySubscribe {
		return status.Error(codes.PermissionDenied, "needs scope read or agent")
	}
	f.subscribes.Add(1)
	h := f.hub
	h.mu.Lock()
	s := &rtFakeSub{ordinal: h.ordinals, node: f.index, channels: req.GetChannels(), ephemeral: req.GetIncludeEphemeral(),
		ch: make(chan *realtimev1.RealtimeEvent, 1<<14)}
	h.ordinals++
	// Replay after after_id, then live: under the lock, so nothing in
	// between is missed or sent twice.
	if after := req.GetAfterId(); after > 0 {
		for _, ev := range h.durable {
			if ev.GetId() > after && slices.Contains(s.channels, ev.GetChannel()) {
				s.ch <- ev
			}
		}
	}
	h.subs = append(h.subs, s)
	cut, hasCut := h.cutAfter[s.ordinal]
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.subs = slices.DeleteFunc(h.subs, func(x *rtFakeSub) bool { return x == s })
	}()
	// What a real stream also carries: a keepalive, and another member's
	// presence event (not this run's, so ignored).
	if err := stream.Send(&realtimev1.SubscribeResponse{Message: &realtimev1.SubscribeResponse_Keepalive{
		Keepalive: &realtimev1.Keepalive{SentAt: timestamppb.Now()}}}); err != nil {
		return err
	}
	if req.GetIncludeEphemeral() {
		presence, _ := structpb.NewStruct(map[string]any{"member": "agent:x", "node_id": strconv.Itoa(s.ordinal)})
		if err := stream.Send(&realtimev1.SubscribeResponse{Message: &realtimev1.SubscribeResponse_Event{
			Event: &realtimev1.RealtimeEvent{Channel: req.GetChannels()[0], Kind: "presence.join", Payload: presence}}}); err != nil {
			return err
		}
	}
	for dataSent := 0; ; {
		select {
		case ev := <-s.ch:
			if ev.GetKind() == rtKindData {
				if hasCut && dataSent == cut {
					// ev is not sent: the resumed stream replays it.
					return status.Error(codes.ResourceExhausted, "subscriber fell too far behind; resubscribe with after_id")
				}
				dataSent++
			}
			if err := stream.Send(&realtimev1.SubscribeResponse{Message: &realtimev1.SubscribeResponse_Event{Event: proto.CloneOf(ev)}}); err != nil {
				return err
			}
		case <-stream.Context().Done():
			return nil
		}
	}
}
