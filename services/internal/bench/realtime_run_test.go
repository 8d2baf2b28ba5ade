package bench

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
)

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
	cfg.drainQuiet = time.Minute // a safety net: nothing is lost, the drain ends when all arrived
	var stderr bytes.Buffer
	begun := time.Now() // no later than the start the publishers' slots count from
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
	// Paced, not sent in one burst: no event left before its slot
	// (publisher p's k-th event has slot p+3k, 1/300 s apart, counted from
	// the start, which is after begun). Load only makes events later, so
	// this holds however busy the machine is; how long the run took does
	// not say anything about pacing.
	require.Len(t, hub.sentNs, res.published)
	for key, ns := range hub.sentNs {
		slot := time.Duration(key[0]+3*key[1]) * time.Second / 300
		require.GreaterOrEqual(t, ns, begun.Add(slot).UnixNano(), "publisher %d's event %d went before its slot", key[0], key[1])
	}
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
			// publisher 1's event 3 twice (followed by event 4 and 5, so the
			// duplicate is in before subscriber 1 has everything).
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
			// The faults need publisher 0's event 5 and publisher 1's event
			// 5 to exist however late the slots start; the drain ends once
			// every delivery but the dropped one is in (it never comes), not
			// after a quiet spell that load could fake.
			cfg.minEvents, cfg.lossPlanned, cfg.drainQuiet = 6, 1, time.Minute
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
			var u *UsageError
			require.NotErrorAs(t, res.failure(), &u, "a failed run is no usage error (exit code 1)")
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
	err = Realtime(t.Context(), []string{"--addrs", lis.Addr().String(),
		"--publishers", "1", "--subscribers", "2", "--rate", "10"}, &out, env(EnvToken, "sb_test"))
	require.Equal(t, codes.Unimplemented, status.Code(err), "%v", err)
	require.ErrorContains(t, err, "Publish (probe)")
	var u *UsageError
	require.NotErrorAs(t, err, &u)
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
	// Subscriptions 0 and 2 are cut once live and sent 30 and 5 data
	// events, when the next is due. Each of the 2 publishers sends at least
	// 20 (40 to every subscription) however late its slots start, so both
	// cuts happen and leave events to resume for: the test waits for them,
	// not for the 300 ms the run would otherwise take.
	hub.cutAfter = map[int]int{0: 30, 2: 5}
	_, addrs := startRTNodes(t, hub, 2)
	cfg, err := parseBenchRealtime([]string{"--addrs", strings.Join(addrs, ","), "--publishers", "2",
		"--subscribers", "3", "--rate", "200", "--warmup", "0s", "--duration", "300ms"}, env(EnvToken, "sb_test"))
	require.NoError(t, err)
	cfg.minEvents, cfg.drainQuiet = 20, time.Minute
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
	cfg.drainQuiet = time.Minute // a safety net: nothing is lost, the drain ends when all arrived
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
	_, err = runBenchRealtime(t.Context(), cfg, io.Discard)
	require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	// Fast means on the refusal, not on rtReadyTimeout: the error says which
	// (the deadline's is "not every subscription saw the probes within").
	// How long that took is the machine's business.
	require.Regexp(t, `^bench realtime: a subscription ended \([01]/2 live\); first stream error: Subscribe on `+addrs[1], err.Error())
}
