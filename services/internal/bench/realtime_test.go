package bench

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

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
		duration: 10 * time.Second, warmup: 2 * time.Second, size: 128, maxBatch: 100, drainQuiet: rtDrainQuiet,
	}, cfg)

	cfg, err = parseBenchRealtime([]string{"--addrs", "127.0.0.1:1, 127.0.0.1:2,[::1]:3", "--publishers=2",
		"--subscribers=3", "--rate=50", "--duration", "1m", "--warmup", "0s", "--size", "7168",
		"--ephemeral", "--max-batch", "1", "--channel", "room:42/typing"}, lookup)
	require.NoError(t, err)
	require.Equal(t, benchRealtimeConfig{
		addrs: []string{"127.0.0.1:1", "127.0.0.1:2", "[::1]:3"}, token: "sb_tok", channel: "room:42/typing",
		publishers: 2, subscribers: 3, rate: 50, duration: time.Minute, size: 7168, ephemeral: true,
		maxBatch: 1, drainQuiet: rtDrainQuiet,
	}, cfg)

	ok := []string{"--publishers", "1", "--subscribers", "1", "--rate", "1"}
	with := func(extra ...string) []string { return append(slices.Clone(ok), extra...) }
	for name, args := range map[string][]string{
		"no publishers":         {"--subscribers", "1", "--rate", "1"},
		"no subscribers":        {"--publishers", "1", "--rate", "1"},
		"no rate":               {"--publishers", "1", "--subscribers", "1"},
		"zero rate":             with("--rate", "0"),
		"zero max batch":        with("--max-batch", "0"),
		"max batch over 1000":   with("--max-batch", "1001"),
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
	}

	_, err = parseBenchRealtime(ok, env())
	require.ErrorContains(t, err, EnvToken)
	_, err = parseBenchRealtime(ok, env(EnvToken, ""))
	require.ErrorContains(t, err, "agent")
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
	var u *UsageError
	require.NotErrorAs(t, r.failure(), &u, "a failed run is no usage error (exit code 1)")
}

// TestParseWireEventsReadsWhatProtoWrote: the bench's lean decoder agrees
// with protobuf on every field it reads, single events and batches alike,
// skips the others, and refuses truncated input.
func TestParseWireEventsReadsWhatProtoWrote(t *testing.T) {
	t.Parallel()
	event := func(id int64, seq float64) *realtimev1.RealtimeEvent {
		p, err := structpb.NewStruct(map[string]any{rtKeyRun: "r1", rtKeyPub: 3.0, rtKeySeq: seq, rtKeySent: "1700000000123", rtKeyPad: "xxxx"})
		require.NoError(t, err)
		return &realtimev1.RealtimeEvent{Durable: true, Id: id, Channel: "bench", Kind: rtKindData, Payload: p, PublishedBy: "agent:x"}
	}
	b, err := proto.Marshal(&realtimev1.SubscribeResponse{Message: &realtimev1.SubscribeResponse_Event{Event: event(1234567890123, 41)}})
	require.NoError(t, err)
	evs, err := parseWireEvents(b, nil)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	ev := evs[0]
	require.True(t, ev.durable)
	require.Equal(t, int64(1234567890123), ev.id)
	require.Equal(t, rtKindData, ev.kind)
	require.Equal(t, "r1", ev.run)
	require.Equal(t, "1700000000123", ev.sent)
	require.InDelta(t, 3, ev.pub, 0)
	require.InDelta(t, 41, ev.seq, 0)

	batch, err := proto.Marshal(&realtimev1.SubscribeResponse{Message: &realtimev1.SubscribeResponse_Events{
		Events: &realtimev1.EventBatch{Events: []*realtimev1.RealtimeEvent{event(7, 1), event(8, 2), event(9, 3)}},
	}})
	require.NoError(t, err)
	evs, err = parseWireEvents(batch, evs[:0])
	require.NoError(t, err)
	require.Len(t, evs, 3)
	for i, ev := range evs {
		require.Equal(t, int64(7+i), ev.id)
		require.InDelta(t, float64(1+i), ev.seq, 0)
	}

	ka, err := proto.Marshal(&realtimev1.SubscribeResponse{Message: &realtimev1.SubscribeResponse_Keepalive{Keepalive: &realtimev1.Keepalive{}}})
	require.NoError(t, err)
	evs, err = parseWireEvents(ka, evs[:0])
	require.NoError(t, err)
	require.Empty(t, evs, "a keepalive is not an event")

	_, err = parseWireEvents(b[:len(b)-3], nil)
	require.Error(t, err, "truncated")
	_, err = parseWireEvents(batch[:len(batch)-3], nil)
	require.Error(t, err, "truncated batch")
}
