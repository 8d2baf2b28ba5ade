package cli

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseBench(t *testing.T) {
	t.Parallel()
	lookup := env(EnvToken, "sb_tok")

	cfg, err := parseBench([]string{"queue", "--todos", "1000", "--workers", "200"}, lookup)
	require.NoError(t, err)
	require.Equal(t, benchConfig{
		addr: "127.0.0.1:9090", queue: "bench", token: "sb_tok",
		todos: 1000, workers: 200, batch: 100, trickle: 1000,
	}, cfg)

	cfg, err = parseBench([]string{"queue", "--todos=5", "--workers=2", "--addr", "10.0.0.1:1",
		"--queue", "b.2", "--batch", "1000", "--trickle", "7", "--buffer", "9"}, lookup)
	require.NoError(t, err)
	require.Equal(t, benchConfig{
		addr: "10.0.0.1:1", queue: "b.2", token: "sb_tok",
		todos: 5, workers: 2, buffer: 9, batch: 1000, trickle: 7,
	}, cfg)

	for name, args := range map[string][]string{
		"no target":      {},
		"wrong target":   {"events", "--todos", "1", "--workers", "1"},
		"no todos":       {"queue", "--workers", "1"},
		"no workers":     {"queue", "--todos", "1"},
		"zero workers":   {"queue", "--todos", "1", "--workers", "0"},
		"batch too big":  {"queue", "--todos", "1", "--workers", "1", "--batch", "1001"},
		"batch zero":     {"queue", "--todos", "1", "--workers", "1", "--batch", "0"},
		"buffer too big": {"queue", "--todos", "1", "--workers", "1", "--buffer", "1001"},
		"buffer neg":     {"queue", "--todos", "1", "--workers", "1", "--buffer", "-1"},
		"trickle zero":   {"queue", "--todos", "1", "--workers", "1", "--trickle", "0"},
		"bad queue":      {"queue", "--todos", "1", "--workers", "1", "--queue", "Bad Queue"},
		"empty addr":     {"queue", "--todos", "1", "--workers", "1", "--addr", ""},
		"unknown flag":   {"queue", "--todos", "1", "--workers", "1", "--fast"},
		"not a number":   {"queue", "--todos", "many", "--workers", "1"},
		"stray argument": {"queue", "--todos", "1", "--workers", "1", "extra"},
	} {
		_, err := parseBench(args, lookup)
		var u *UsageError
		require.ErrorAs(t, err, &u, name)
		require.Equal(t, 2, ExitCode(err), name)
	}

	_, err = parseBench([]string{"queue", "--todos", "1", "--workers", "1"}, env())
	require.ErrorContains(t, err, EnvToken)
	_, err = parseBench([]string{"queue", "--todos", "1", "--workers", "1"}, env(EnvToken, ""))
	require.ErrorContains(t, err, "agent,publisher")
}

func TestBenchUsageErrorWritesNothing(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	err := Bench(t.Context(), []string{"queue"}, &out, env(EnvToken, "t"))
	require.Equal(t, 2, ExitCode(err))
	require.Empty(t, out.String())
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	require.Zero(t, percentile(nil, 50))

	one := []time.Duration{7}
	for _, p := range []float64{1, 50, 99, 100} {
		require.Equal(t, time.Duration(7), percentile(one, p))
	}

	// 1..100: the nearest-rank p-th percentile is p itself.
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i + 1)
	}
	for _, p := range []float64{1, 50, 95, 99, 100} {
		require.Equal(t, time.Duration(p), percentile(hundred, p), "p%v", p)
	}
	require.Equal(t, time.Duration(51), percentile(hundred, 50.5))

	// Ten values: p50 is the 5th, p95 and p99 the 10th (rank = ceil(p·n)).
	ten := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 1000}
	require.Equal(t, time.Duration(5), percentile(ten, 50))
	require.Equal(t, time.Duration(9), percentile(ten, 90))
	require.Equal(t, time.Duration(1000), percentile(ten, 95))
	require.Equal(t, time.Duration(1000), percentile(ten, 99))

	// Out-of-range p is clamped to the extremes.
	require.Equal(t, time.Duration(1), percentile(ten, 0))
	require.Equal(t, time.Duration(1000), percentile(ten, 150))
}

func TestResultLine(t *testing.T) {
	t.Parallel()
	r := benchResult{jobsPerSec: 31234.56, p50: 1234567 * time.Nanosecond, p95: 3 * time.Millisecond, p99: 4500 * time.Microsecond}
	require.Equal(t, "RESULT jobs_per_s=31235 claim_p50_ms=1.235 claim_p95_ms=3.000 claim_p99_ms=4.500", r.line())
}

// TestBenchAgainstFake runs both phases against an in-memory QueueService
// (the real one is exercised by running the command against a node).
func TestBenchAgainstFake(t *testing.T) {
	t.Parallel()
	ignore := goleak.IgnoreCurrent() // the test runner and parallel tests
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	f := &benchFake{running: map[int64]int32{}, wake: make(chan struct{})}
	var lc net.ListenConfig
	lis, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		if a := md.Get("authorization"); len(a) != 1 || a[0] != "Bearer sb_test" {
			return nil, status.Error(codes.Unauthenticated, "bad token")
		}
		return h(ctx, req)
	}))
	queuev1.RegisterQueueServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	cfg, err := parseBench([]string{"queue", "--addr", lis.Addr().String(), "--todos", "1234",
		"--workers", "150", "--batch", "100", "--trickle", "40"}, env(EnvToken, "sb_test"))
	require.NoError(t, err)
	var stderr bytes.Buffer
	res, err := runBench(t.Context(), cfg, &stderr)
	require.NoError(t, err, stderr.String())
	require.Positive(t, res.jobsPerSec)
	require.Positive(t, res.p50)
	require.LessOrEqual(t, res.p50, res.p95)
	require.LessOrEqual(t, res.p95, res.p99)
	require.Regexp(t, `^RESULT jobs_per_s=\d+ claim_p50_ms=\d+\.\d{3} claim_p95_ms=\d+\.\d{3} claim_p99_ms=\d+\.\d{3}$`, res.line())

	f.mu.Lock()
	defer f.mu.Unlock()
	require.Equal(t, 1234+40, f.completed)
	require.Equal(t, 13, f.batches, "1234 todos in batches of 100")
	require.Empty(t, f.pending)
}

// benchFake is an in-memory QueueService with the calls bench uses.
type benchFake struct {
	queuev1.UnimplementedQueueServiceServer

	mu        sync.Mutex
	next      int64
	pending   []*queuev1.Todo
	running   map[int64]int32
	wake      chan struct{}
	completed int
	batches   int
}

func (f *benchFake) add(reqs []*queuev1.EnqueueRequest) *queuev1.Todo {
	var last *queuev1.Todo
	for _, r := range reqs {
		f.next++
		last = &queuev1.Todo{Id: f.next, Queue: "bench", Payload: r.GetPayload()}
		f.pending = append(f.pending, last)
	}
	close(f.wake)
	f.wake = make(chan struct{})
	return last
}

func (f *benchFake) Enqueue(_ context.Context, req *queuev1.EnqueueRequest) (*queuev1.EnqueueResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &queuev1.EnqueueResponse{Todo: proto.CloneOf(f.add([]*queuev1.EnqueueRequest{req}))}, nil
}

func (f *benchFake) EnqueueBatch(_ context.Context, req *queuev1.EnqueueBatchRequest) (*queuev1.EnqueueBatchResponse, error) {
	if n := len(req.GetRequests()); n < 1 || n > 1000 {
		return nil, status.Error(codes.InvalidArgument, "1–1000 requests")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches++
	f.add(req.GetRequests())
	return &queuev1.EnqueueBatchResponse{}, nil
}

func (f *benchFake) QueueStats(context.Context, *queuev1.QueueStatsRequest) (*queuev1.QueueStatsResponse, error) {
	return nil, status.Error(codes.PermissionDenied, "needs read") // as for an agent,publisher token
}

func (f *benchFake) Claim(ctx context.Context, req *queuev1.ClaimRequest) (*queuev1.ClaimResponse, error) {
	if req.GetMaxTodos() > 1000 {
		return nil, status.Error(codes.InvalidArgument, "max_todos")
	}
	timeout := time.NewTimer(req.GetWait().AsDuration())
	defer timeout.Stop()
	f.mu.Lock()
	for len(f.pending) == 0 {
		wake := f.wake
		f.mu.Unlock()
		select {
		case <-wake:
		case <-timeout.C:
			return &queuev1.ClaimResponse{}, nil
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		f.mu.Lock()
	}
	defer f.mu.Unlock()
	n := min(int(max(req.GetMaxTodos(), 1)), len(f.pending))
	resp := &queuev1.ClaimResponse{}
	for _, td := range f.pending[:n] {
		td.Attempt++
		f.running[td.GetId()] = td.GetAttempt()
		resp.Todos = append(resp.Todos, proto.CloneOf(td))
	}
	f.pending = f.pending[n:]
	return resp, nil
}

func (f *benchFake) Complete(_ context.Context, req *queuev1.CompleteRequest) (*queuev1.CompleteResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if tok, ok := f.running[req.GetId()]; !ok || tok != req.GetLeaseToken() {
		return nil, status.Error(codes.FailedPrecondition, "stale lease token")
	}
	delete(f.running, req.GetId())
	f.completed++
	return &queuev1.CompleteResponse{}, nil
}

func TestParseBenchIngest(t *testing.T) {
	t.Parallel()
	lookup := env(EnvToken, "sb_tok")
	cfg, err := parseBenchIngest([]string{"--requests", "10", "--concurrency", "4"}, lookup)
	require.NoError(t, err)
	require.Equal(t, benchIngestConfig{
		url: "http://127.0.0.1:8080", token: "sb_tok", queue: "bench-ingest", requests: 10, concurrency: 4, bodyBytes: 256,
	}, cfg)
	for name, args := range map[string][]string{
		"no requests":    {"--concurrency", "1"},
		"no concurrency": {"--requests", "1"},
		"tiny body":      {"--requests", "1", "--concurrency", "1", "--body-bytes", "8"},
		"bad url":        {"--requests", "1", "--concurrency", "1", "--url", "127.0.0.1:8080"},
		"bad queue":      {"--requests", "1", "--concurrency", "1", "--queue", "Bad"},
		"extra":          {"--requests", "1", "--concurrency", "1", "more"},
	} {
		_, err := parseBenchIngest(args, lookup)
		var ue *UsageError
		require.ErrorAs(t, err, &ue, name)
	}
	_, err = parseBenchIngest([]string{"--requests", "1", "--concurrency", "1"}, env())
	require.ErrorContains(t, err, EnvToken)
}
