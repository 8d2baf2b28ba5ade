package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
)

func TestParseBenchRealtime(t *testing.T) {
	t.Parallel()
	lookup := env(EnvToken, "sb_tok")

	cfg, err := parseBenchRealtime([]string{"--publishers", "10", "--subscribers", "100", "--rate", "1000"}, lookup)
	require.NoError(t, err)
	require.Equal(t, benchRealtimeConfig{
		addrs: []string{"127.0.0.1:9090"}, token: "sb_tok", channel: "bench",
		publishers: 10, subscribers: 100, rate: 1000,
		duration: 10 * time.Second, warmup: 2 * time.Second, size: 128, drainQuiet: rtDrainQuiet,
	}, cfg)

	cfg, err = parseBenchRealtime([]string{"--addrs", "127.0.0.1:1, 127.0.0.1:2,[::1]:3", "--publishers=2",
		"--subscribers=3", "--rate=50", "--duration", "1m", "--warmup", "0s", "--size", "7168",
		"--ephemeral", "--channel", "room:42/typing"}, lookup)
	require.NoError(t, err)
	require.Equal(t, benchRealtimeConfig{
		addrs: []string{"127.0.0.1:1", "127.0.0.1:2", "[::1]:3"}, token: "sb_tok", channel: "room:42/typing",
		publishers: 2, subscribers: 3, rate: 50, duration: time.Minute, size: 7168, ephemeral: true,
		drainQuiet: rtDrainQuiet,
	}, cfg)

	ok := []string{"--publishers", "1", "--subscribers", "1", "--rate", "1"}
	with := func(extra ...string) []string { return append(slices.Clone(ok), extra...) }
	for name, args := range map[string][]string{
		"no publishers":         {"--subscribers", "1", "--rate", "1"},
		"no subscribers":        {"--publishers", "1", "--rate", "1"},
		"no rate":               {"--publishers", "1", "--subscribers", "1"},
		"zero rate":             with("--rate", "0"),
		"negative publishers":   with("--publishers", "-1"),
		"too many subscribers":  with("--subscribers", "10001"),
		"zero duration":         with("--duration", "0s"),
		"negative warmup":       with("--warmup", "-1s"),
		"duration not a time":   with("--duration", "10"),
		"tiny payload":          with("--size", "63"),
		"durable over 64 KiB":   with("--size", "65537"),
		"ephemeral over 7 KiB":  with("--ephemeral", "--size", "7169"),
		"bad channel":           with("--channel", "-bench"),
		"channel with a space":  with("--channel", "a b"),
		"empty addrs":           with("--addrs", ""),
		"addr without port":     with("--addrs", "127.0.0.1:9090,localhost"),
		"trailing comma":        with("--addrs", "127.0.0.1:9090,"),
		"unknown flag":          with("--fast"),
		"stray argument":        with("extra"),
		"too many samples kept": {"--publishers", "1", "--subscribers", "10000", "--rate", "10000", "--duration", "1m"},
	} {
		_, err := parseBenchRealtime(args, lookup)
		var u *UsageError
		require.ErrorAs(t, err, &u, name)
		require.Equal(t, 2, ExitCode(err), name)
	}

	_, err = parseBenchRealtime(ok, env())
	require.ErrorContains(t, err, EnvToken)
	_, err = parseBenchRealtime(ok, env(EnvToken, ""))
	require.ErrorContains(t, err, "agent")
}

func TestBenchRealtimeDispatch(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	err := Bench(t.Context(), []string{"realtime", "--publishers", "1"}, &out, env(EnvToken, "t"))
	require.Equal(t, 2, ExitCode(err))
	require.ErrorContains(t, err, "bench realtime: --subscribers")
	require.Empty(t, out.String())

	// The target list names realtime.
	err = Bench(t.Context(), nil, &out, env(EnvToken, "t"))
	require.ErrorContains(t, err, "switchboard bench realtime --publishers P")
}

func TestRTTally(t *testing.T) {
	t.Parallel()
	tl := newRTTally(2)
	const from = 1000 // the measured window opens at 1000 ns
	require.True(t, tl.record(0, 0, 900, 950, from), "warmup event")
	require.True(t, tl.record(0, 1, 1000, 1300, from))
	require.True(t, tl.record(1, 0, 1100, 1200, from))
	require.True(t, tl.record(0, 1, 1000, 2000, from), "a duplicate")
	require.True(t, tl.record(1, 200, 5000, 5007, from), "a sequence beyond the first bitset word")
	require.False(t, tl.record(2, 0, 1000, 1001, from), "no publisher 2")
	require.False(t, tl.record(-1, 0, 1000, 1001, from))
	require.False(t, tl.record(0, -1, 1000, 1001, from))

	require.EqualValues(t, 4, tl.distinct)
	require.EqualValues(t, 1, tl.dups)
	// Only first deliveries sent in the window are timed: not the warmup
	// event, not the duplicate.
	require.Equal(t, []time.Duration{300, 100, 7}, tl.lat)
	require.EqualValues(t, 3, tl.measured)
	require.EqualValues(t, 5007, tl.lastMeasuredNs)
	require.True(t, tl.has(1, 200))
	require.False(t, tl.has(1, 199))
	require.False(t, tl.has(1, 1_000_000))
	require.False(t, tl.has(5, 0))

	// Publisher 0 sent 0–3 (2 failed, so it is expected nowhere), publisher
	// 1 sent 0–200: missing are 0/3 and 1/1…1/199.
	pubs := []rtPublished{
		{sent: 4, failed: map[int]bool{2: true}},
		{sent: 201, failed: map[int]bool{}},
	}
	require.Equal(t, 3, pubs[0].ok())
	require.EqualValues(t, 1+199, tl.lost(pubs))

	// A subscriber that received nothing lost everything acknowledged.
	require.EqualValues(t, 3+201, newRTTally(2).lost(pubs))
}

func TestRTResult(t *testing.T) {
	t.Parallel()
	r := rtResult{deliveredPerSec: 99999.6, p50: 1234567 * time.Nanosecond, p99: 20 * time.Millisecond, durable: true}
	require.Equal(t, "RESULT delivered_per_s=100000 p50_ms=1.235 p99_ms=20.000", r.line())
	require.NoError(t, r.failure())

	r.lost = 3
	require.ErrorContains(t, r.failure(), "3 deliveries lost, 0 duplicated")
	r.lost, r.dups = 0, 1
	require.ErrorContains(t, r.failure(), "0 deliveries lost, 1 duplicated")

	// Ephemeral events are best effort: loss is reported, not a failure.
	r.durable, r.lost = false, 3
	require.NoError(t, r.failure())
	r.publishErrs = 2
	require.ErrorContains(t, r.failure(), "2 Publish calls failed")
	r.publishErrs, r.streamErrs = 0, []error{status.Error(codes.Unavailable, "node stopping")}
	require.ErrorContains(t, r.failure(), "node stopping")
	require.Equal(t, 1, ExitCode(r.failure()))
}

// TestBenchRealtimeAgainstFake runs the benchmark against three in-memory
// nodes sharing one fan-out (the real service is exercised by
// deploy/local/bench-realtime.sh). The tests that run servers are not
// parallel: goleak here and in TestBenchAgainstFake would see each other's
// goroutines.
//
//nolint:paralleltest // goleak; see above
func TestBenchRealtimeAgainstFake(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	hub := newRTHub()
	nodes, addrs := startRTNodes(t, hub, 3)

	cfg, err := parseBenchRealtime([]string{"--addrs", strings.Join(addrs, ","), "--publishers", "3",
		"--subscribers", "7", "--rate", "300", "--warmup", "100ms", "--duration", "500ms", "--size", "200"},
		env(EnvToken, "sb_test"))
	require.NoError(t, err)
	var stderr bytes.Buffer
	res, err := runBenchRealtime(t.Context(), cfg, &stderr)
	require.NoError(t, err, stderr.String())
	require.NoError(t, res.failure(), stderr.String())
	t.Log(stderr.String())

	// 300/s for 600 ms, paced: never more than about 180 events (fewer when
	// the machine is loaded and publishers start late), each to all 7
	// subscribers.
	require.Positive(t, res.published, stderr.String())
	require.LessOrEqual(t, res.published, 180+18, stderr.String())
	require.Zero(t, res.publishErrs)
	require.Equal(t, int64(res.published)*7, res.deliveries)
	require.Zero(t, res.lost)
	require.Zero(t, res.dups)
	require.Zero(t, res.outOfOrder)
	require.Zero(t, res.malformed)
	// Every event published in the window reached all 7 subscribers, and
	// the figures are derived from them. (How many were published in ~0.5 s
	// depends on the machine's load: rates are the benchmark's to measure,
	// not this test's.)
	require.Positive(t, res.samples)
	require.LessOrEqual(t, res.samples, res.published*7)
	require.Positive(t, res.deliveredPerSec, stderr.String())
	require.Positive(t, res.p50)
	require.LessOrEqual(t, res.p50, res.p90)
	require.LessOrEqual(t, res.p90, res.p99)
	require.LessOrEqual(t, res.p99, res.max)
	require.Regexp(t, `^RESULT delivered_per_s=\d+ p50_ms=\d+\.\d{3} p99_ms=\d+\.\d{3}$`, res.line())
	require.Contains(t, stderr.String(), "0 lost, 0 duplicated")

	// Subscribers and publishers round-robin over the nodes.
	for i, want := range []int64{3, 2, 2} {
		require.Equal(t, want, nodes[i].subscribes.Load(), "subscriptions on node %d", i)
		require.Positive(t, nodes[i].publishes.Load(), "publishes on node %d", i)
	}

	hub.mu.Lock()
	defer hub.mu.Unlock()
	require.Len(t, hub.dataAt, res.published)
	// Durable data events of about --size bytes.
	require.True(t, hub.allDurable)
	require.InDelta(t, 200, hub.maxSize, 4)
	// Paced, not sent in one burst: the events are spread over the run (a
	// lower bound, which load can only lengthen).
	require.Greater(t, hub.dataAt[len(hub.dataAt)-1].Sub(hub.dataAt[0]), 450*time.Millisecond)
}

// TestBenchRealtimeCountsLossAndDuplicates has the fake nodes drop one
// delivery and duplicate another: the run fails for durable events and
// only reports it for ephemeral ones.
//
//nolint:paralleltest // goleak, as TestBenchRealtimeAgainstFake
func TestBenchRealtimeCountsLossAndDuplicates(t *testing.T) {
	for _, ephemeral := range []bool{false, true} {
		t.Run(map[bool]string{false: "durable", true: "ephemeral"}[ephemeral], func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
			hub := newRTHub()
			// Subscriber 0 misses publisher 0's event 5, subscriber 1 gets
			// publisher 1's event 3 twice.
			hub.fault = func(sub int, pub, seq float64) (drop, dup bool) {
				return sub == 0 && pub == 0 && seq == 5, sub == 1 && pub == 1 && seq == 3
			}
			_, addrs := startRTNodes(t, hub, 2)
			args := []string{"--addrs", strings.Join(addrs, ","), "--publishers", "2",
				"--subscribers", "3", "--rate", "200", "--warmup", "0s", "--duration", "200ms"}
			if ephemeral {
				args = append(args, "--ephemeral")
			}
			cfg, err := parseBenchRealtime(args, env(EnvToken, "sb_test"))
			require.NoError(t, err)
			cfg.drainQuiet = 300 * time.Millisecond // the lost delivery never comes
			var stderr bytes.Buffer
			res, err := runBenchRealtime(t.Context(), cfg, &stderr)
			require.NoError(t, err, stderr.String())
			require.EqualValues(t, 1, res.lost, stderr.String())
			require.EqualValues(t, 1, res.dups)
			require.Equal(t, int64(res.published)*3-1, res.deliveries)
			require.Contains(t, stderr.String(), "1 lost, 1 duplicated")
			if ephemeral {
				require.NoError(t, res.failure())
				return
			}
			require.ErrorContains(t, res.failure(), "1 deliveries lost, 1 duplicated")
			require.Equal(t, 1, ExitCode(res.failure()))
		})
	}
}

// TestBenchRealtimeUnimplemented is the run against a node whose realtime
// service is not there yet: it fails at once with the server's answer.
//
//nolint:paralleltest // goleak, as TestBenchRealtimeAgainstFake
func TestBenchRealtimeUnimplemented(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	var lc net.ListenConfig
	lis, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	realtimev1.RegisterRealtimeServiceServer(srv, realtimev1.UnimplementedRealtimeServiceServer{})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	var out bytes.Buffer
	err = Bench(t.Context(), []string{"realtime", "--addrs", lis.Addr().String(),
		"--publishers", "1", "--subscribers", "2", "--rate", "10"}, &out, env(EnvToken, "sb_test"))
	require.Equal(t, codes.Unimplemented, status.Code(err), "%v", err)
	require.ErrorContains(t, err, "Publish (probe)")
	require.Equal(t, 1, ExitCode(err))
	require.Empty(t, out.String())
}

// TestBenchRealtimeResumes has a node end two subscriptions as if they fell
// behind: they resume with after_id and, durable events being replayed,
// nothing is lost or delivered twice.
//
//nolint:paralleltest // goleak, as TestBenchRealtimeAgainstFake
func TestBenchRealtimeResumes(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	hub := newRTHub()
	hub.cutAfter = map[int]int{0: 30, 2: 5}
	_, addrs := startRTNodes(t, hub, 2)
	cfg, err := parseBenchRealtime([]string{"--addrs", strings.Join(addrs, ","), "--publishers", "2",
		"--subscribers", "3", "--rate", "200", "--warmup", "0s", "--duration", "300ms"}, env(EnvToken, "sb_test"))
	require.NoError(t, err)
	var stderr bytes.Buffer
	res, err := runBenchRealtime(t.Context(), cfg, &stderr)
	require.NoError(t, err, stderr.String())
	require.Equal(t, 2, res.resumes, stderr.String())
	require.Zero(t, res.lost)
	require.Zero(t, res.dups)
	require.Zero(t, res.outOfOrder)
	require.Equal(t, int64(res.published)*3, res.deliveries)
	require.NoError(t, res.failure())
	require.Contains(t, stderr.String(), "2 subscriptions were ended by their node and resumed with after_id")
}

// TestBenchRealtimeWaitsForEveryPath has node 1's events not reach node
// 0's subscribers for a while (a mesh link coming up): the run starts only
// once every publishing node reaches every subscription, so no ephemeral
// event is lost even without a warmup.
//
//nolint:paralleltest // goleak, as TestBenchRealtimeAgainstFake
func TestBenchRealtimeWaitsForEveryPath(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	hub := newRTHub()
	up := time.Now().Add(400 * time.Millisecond)
	hub.linkDown = func(from, to int) bool { return from == 1 && to == 0 && time.Now().Before(up) }
	_, addrs := startRTNodes(t, hub, 2)
	cfg, err := parseBenchRealtime([]string{"--addrs", strings.Join(addrs, ","), "--publishers", "2",
		"--subscribers", "4", "--rate", "200", "--warmup", "0s", "--duration", "200ms", "--ephemeral"},
		env(EnvToken, "sb_test"))
	require.NoError(t, err)
	cfg.drainQuiet = 300 * time.Millisecond
	var stderr bytes.Buffer
	res, err := runBenchRealtime(t.Context(), cfg, &stderr)
	require.NoError(t, err, stderr.String())
	hub.mu.Lock()
	first := hub.dataAt[0]
	hub.mu.Unlock()
	require.False(t, first.Before(up), "a data event was published before the link was up")
	require.Zero(t, res.lost, stderr.String())
	require.Equal(t, int64(res.published)*4, res.deliveries)
	require.NoError(t, res.failure())
}

// TestBenchRealtimeSubscriptionRefused fails fast when a node refuses the
// subscription (a token without the read or agent scope), naming why.
//
//nolint:paralleltest // goleak, as TestBenchRealtimeAgainstFake
func TestBenchRealtimeSubscriptionRefused(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	nodes, addrs := startRTNodes(t, newRTHub(), 2)
	nodes[1].denySubscribe = true
	cfg, err := parseBenchRealtime([]string{"--addrs", strings.Join(addrs, ","), "--publishers", "1",
		"--subscribers", "2", "--rate", "10"}, env(EnvToken, "sb_test"))
	require.NoError(t, err)
	started := time.Now()
	_, err = runBenchRealtime(t.Context(), cfg, io.Discard)
	require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	require.Regexp(t, `a subscription ended \([01]/2 live\); first stream error: Subscribe on `+addrs[1], err.Error())
	require.Less(t, time.Since(started), rtReadyTimeout/2)
}

// rtHub is the fan-out the fake nodes share.
type rtHub struct {
	mu         sync.Mutex
	nextID     int64
	ordinals   int
	durable    []*realtimev1.RealtimeEvent // every durable event, for replay
	subs       []*rtFakeSub
	dataAt     []time.Time // when each data event was published
	maxSize    int
	allDurable bool
	// fault decides, per subscriber (in order of subscription) and data
	// event, whether to drop or duplicate the delivery.
	fault func(sub int, pub, seq float64) (drop, dup bool)
	// cutAfter ends subscription `sub`'s stream with RESOURCE_EXHAUSTED
	// after it sent n events (a subscriber that fell behind).
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

func newRTHub() *rtHub { return &rtHub{allDurable: true} }

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
	for sent := 0; ; sent++ {
		if hasCut && sent == cut {
			return status.Error(codes.ResourceExhausted, "subscriber fell too far behind; resubscribe with after_id")
		}
		select {
		case ev := <-s.ch:
			if err := stream.Send(&realtimev1.SubscribeResponse{Message: &realtimev1.SubscribeResponse_Event{Event: proto.CloneOf(ev)}}); err != nil {
				return err
			}
		case <-stream.Context().Done():
			return nil
		}
	}
}

// TestParseWireEventReadsWhatProtoWrote: the bench's lean decoder agrees
// with protobuf on every field it reads, skips the others, and refuses
// truncated input.
func TestParseWireEventReadsWhatProtoWrote(t *testing.T) {
	t.Parallel()
	p, err := structpb.NewStruct(map[string]any{rtKeyRun: "r1", rtKeyPub: 3.0, rtKeySeq: 41.0, rtKeySent: "1700000000123", rtKeyPad: "xxxx"})
	require.NoError(t, err)
	b, err := proto.Marshal(&realtimev1.SubscribeResponse{Message: &realtimev1.SubscribeResponse_Event{Event: &realtimev1.RealtimeEvent{
		Durable: true, Id: 1234567890123, Channel: "bench", Kind: rtKindData, Payload: p, PublishedBy: "agent:x",
	}}})
	require.NoError(t, err)
	ev, err := parseWireEvent(b)
	require.NoError(t, err)
	require.True(t, ev.isEvent)
	require.True(t, ev.durable)
	require.Equal(t, int64(1234567890123), ev.id)
	require.Equal(t, rtKindData, ev.kind)
	require.Equal(t, "r1", ev.run)
	require.Equal(t, "1700000000123", ev.sent)
	require.InDelta(t, 3, ev.pub, 0)
	require.InDelta(t, 41, ev.seq, 0)

	ka, err := proto.Marshal(&realtimev1.SubscribeResponse{Message: &realtimev1.SubscribeResponse_Keepalive{Keepalive: &realtimev1.Keepalive{}}})
	require.NoError(t, err)
	ev, err = parseWireEvent(ka)
	require.NoError(t, err)
	require.False(t, ev.isEvent, "a keepalive is not an event")

	_, err = parseWireEvent(b[:len(b)-3])
	require.Error(t, err, "truncated")
}
