package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/logging"
	"github.com/switchboard/switchboard/pkg/worker"
)

// EnvToken is the bearer token `switchboard bench` sends. It needs the scopes
// publisher (Enqueue, EnqueueBatch) and agent (Claim, Heartbeat, Complete…):
// mint an agent-scoped credential with scopes agent,publisher
// (AdminService.MintCredential with agent_id set and scopes
// ["agent", "publisher"]). With the read scope too, the benchmark first checks
// that the queue is empty.
const EnvToken = "SWITCHBOARD_TOKEN"

const benchUsage = `switchboard bench queue --todos N --workers W [--buffer B] [--addr 127.0.0.1:9090] [--queue bench] [--batch 100] [--trickle 1000]`

// benchConfig is the parsed command line of `bench queue`.
type benchConfig struct {
	addr    string
	queue   string
	token   string
	todos   int // phase 1: todos enqueued and drained
	workers int // total handler concurrency across the SDK workers
	buffer  int // worker.Options.Buffer of each SDK worker
	batch   int // EnqueueBatch size
	trickle int // phase 2: todos enqueued one at a time
}

var queueName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// parseBench parses the words after `bench`.
func parseBench(args []string, lookup func(string) (string, bool)) (benchConfig, error) {
	if len(args) == 0 || args[0] != "queue" {
		return benchConfig{}, usageErr("bench needs a target: %s | %s | %s", benchUsage, benchIngestUsage, benchRealtimeUsage)
	}
	cfg := benchConfig{}
	fs := flag.NewFlagSet("bench queue", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:9090", "gRPC address of a switchboard node")
	fs.StringVar(&cfg.queue, "queue", "bench", "queue to use; should be empty")
	fs.IntVar(&cfg.todos, "todos", 0, "todos to enqueue and drain (throughput phase)")
	fs.IntVar(&cfg.workers, "workers", 0, "concurrent handlers across the SDK workers")
	fs.IntVar(&cfg.buffer, "buffer", 0, "claimed todos each SDK worker may hold for a free handler (worker.Options.Buffer), 0–1000")
	fs.IntVar(&cfg.batch, "batch", 100, "EnqueueBatch size, 1–1000")
	fs.IntVar(&cfg.trickle, "trickle", 1000, "todos enqueued one at a time (latency phase)")
	if err := fs.Parse(args[1:]); err != nil {
		return benchConfig{}, usageErr("bench queue: %v", err)
	}
	switch {
	case fs.NArg() != 0:
		return benchConfig{}, usageErr("bench queue: unexpected argument %q", fs.Arg(0))
	case cfg.todos < 1:
		return benchConfig{}, usageErr("bench queue: --todos must be at least 1")
	case cfg.workers < 1:
		return benchConfig{}, usageErr("bench queue: --workers must be at least 1")
	case cfg.buffer < 0 || cfg.buffer > 1000:
		return benchConfig{}, usageErr("bench queue: --buffer must be 0–1000, got %d", cfg.buffer)
	case cfg.batch < 1 || cfg.batch > 1000:
		return benchConfig{}, usageErr("bench queue: --batch must be 1–1000, got %d", cfg.batch)
	case cfg.trickle < 1:
		return benchConfig{}, usageErr("bench queue: --trickle must be at least 1")
	case cfg.addr == "":
		return benchConfig{}, usageErr("bench queue: --addr is empty")
	case !queueName.MatchString(cfg.queue):
		return benchConfig{}, usageErr("bench queue: --queue %q is not a queue name (^[a-z0-9][a-z0-9._-]{0,62}$)", cfg.queue)
	}
	tok, ok := lookup(EnvToken)
	if !ok || tok == "" {
		return benchConfig{}, usageErr("bench queue: set %s to a token with scopes agent,publisher", EnvToken)
	}
	cfg.token = tok
	return cfg, nil
}

// Bench runs `switchboard bench …` (args are the words after "bench")
// against a running node: enqueue --todos todos and drain them with --workers
// concurrent handlers through pkg/worker (throughput), then enqueue --trickle
// todos one at a time while the workers wait in Claim (enqueue→claim
// latency). Progress goes to stderr; stdout gets one line:
//
//	RESULT jobs_per_s=<n> claim_p50_ms=<n> claim_p95_ms=<n> claim_p99_ms=<n>
//
// `bench ingest` is BenchIngest, `bench realtime` BenchRealtime.
func Bench(ctx context.Context, args []string, stdout io.Writer, lookup func(string) (string, bool)) error {
	if len(args) > 0 && args[0] == "ingest" {
		return BenchIngest(ctx, args[1:], stdout, lookup)
	}
	if len(args) > 0 && args[0] == "realtime" {
		return BenchRealtime(ctx, args[1:], stdout, lookup)
	}
	cfg, err := parseBench(args, lookup)
	if err != nil {
		return err
	}
	res, err := runBench(ctx, cfg, os.Stderr)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, res.line())
	return err
}

// benchResult is what the RESULT line reports.
type benchResult struct {
	jobsPerSec    float64
	p50, p95, p99 time.Duration
}

func (r benchResult) line() string {
	return fmt.Sprintf("RESULT jobs_per_s=%.0f claim_p50_ms=%.3f claim_p95_ms=%.3f claim_p99_ms=%.3f",
		r.jobsPerSec, ms(r.p50), ms(r.p95), ms(r.p99))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// percentile returns the nearest-rank p-th percentile (0 < p ≤ 100) of
// sorted (ascending): the smallest value with at least p% of the values at or
// below it. It returns 0 for no values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// Sizing of the SDK side: one Worker (one claim loop, one acker batching
// completions into CompleteBatch) per perWorker handler slots, spread over at
// most maxConns connections. Few, large Workers make large Claim and
// CompleteBatch statements (each Worker's Prefetch is its Concurrency, up to
// 1000).
const (
	perWorker = 1000
	maxConns  = 4
	// benchPayloadRun and benchPayloadEnqueued are the payload keys.
	benchPayloadRun      = "bench_run"
	benchPayloadEnqueued = "enqueued_at_ns"
	// stallTimeout aborts a phase that makes no progress.
	stallTimeout = 60 * time.Second
)

// bench is one run's shared state.
type bench struct {
	cfg    benchConfig
	runID  string
	stderr io.Writer
	conns  []*grpc.ClientConn
	client queuev1.QueueServiceClient

	workers []*worker.Worker
	foreign atomic.Int64 // todos of another run found in the queue
	latency chan handled // trickle todos reaching the handler
}

// handled is a trickle todo reaching the handler: when, and the stamp its
// payload carried (ok false: it could not be read back).
type handled struct {
	at  time.Time
	seq int64
	ok  bool
}

func runBench(ctx context.Context, cfg benchConfig, stderr io.Writer) (benchResult, error) {
	b := &bench{
		cfg:     cfg,
		runID:   strconv.FormatInt(time.Now().UnixNano(), 36),
		stderr:  stderr,
		latency: make(chan handled, 1),
	}
	nWorkers := (cfg.workers + perWorker - 1) / perWorker
	for range min(nWorkers, maxConns) {
		conn, err := grpc.NewClient(cfg.addr,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithPerRPCCredentials(auth.Bearer{Token: cfg.token, AllowInsecure: true}))
		if err != nil {
			return benchResult{}, fmt.Errorf("connect %s: %w", cfg.addr, err)
		}
		defer func() { _ = conn.Close() }()
		b.conns = append(b.conns, conn)
	}
	b.client = queuev1.NewQueueServiceClient(b.conns[0])
	b.checkEmpty(ctx)

	// Phase 1a: enqueue.
	if err := b.enqueueAll(ctx); err != nil {
		return benchResult{}, err
	}

	// Phase 1b: drain with the SDK, from the first claim to the last
	// completion.
	log, err := logging.New("warn", "console")
	if err != nil {
		return benchResult{}, err
	}
	defer func() { _ = log.Sync() }()
	wctx, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	var wg sync.WaitGroup
	werr := make(chan error, nWorkers)
	host, _ := os.Hostname()
	started := time.Now()
	for i := range nWorkers {
		conc := perWorker
		if i == nWorkers-1 {
			conc = cfg.workers - perWorker*(nWorkers-1)
		}
		w := worker.New(b.conns[i%len(b.conns)], cfg.queue, b.handle, worker.Options{
			WorkerID:    fmt.Sprintf("bench-%s-%d-%s-%d", host, os.Getpid(), b.runID, i),
			Concurrency: conc,
			Buffer:      cfg.buffer,
			Wait:        10 * time.Second,
			Logger:      log,
		})
		b.workers = append(b.workers, w)
		wg.Go(func() {
			if err := w.Run(wctx); err != nil {
				werr <- err
			}
		})
	}
	defer wg.Wait()
	defer stopWorkers()

	drain, err := b.drain(ctx, started, werr)
	if err != nil {
		return benchResult{}, err
	}
	res := benchResult{jobsPerSec: float64(cfg.todos) / drain.Seconds()}
	fmt.Fprintf(stderr, "bench: drained %d todos with %d handlers and a buffer of %d (%d SDK workers, %d connections) in %s: %.0f jobs/s\n",
		cfg.todos, cfg.workers, cfg.buffer, nWorkers, len(b.conns), drain.Round(time.Millisecond), res.jobsPerSec)

	// Phase 2: trickle, one enqueue at a time while the workers wait.
	lat, fromSend, err := b.trickle(ctx, werr)
	if err != nil {
		return benchResult{}, err
	}
	slices.Sort(lat)
	slices.Sort(fromSend)
	res.p50, res.p95, res.p99 = percentile(lat, 50), percentile(lat, 95), percentile(lat, 99)
	fmt.Fprintf(stderr, "bench: enqueue→claim over %d todos, from the Enqueue call returning (the peers' measure): p50 %.3f ms, p95 %.3f ms, p99 %.3f ms, max %.3f ms\n",
		len(lat), ms(res.p50), ms(res.p95), ms(res.p99), ms(lat[len(lat)-1]))
	fmt.Fprintf(stderr, "bench: the same from the Enqueue call being sent (adds the enqueue's own round trip and commit): p50 %.3f ms, p95 %.3f ms, p99 %.3f ms, max %.3f ms\n",
		ms(percentile(fromSend, 50)), ms(percentile(fromSend, 95)), ms(percentile(fromSend, 99)), ms(fromSend[len(fromSend)-1]))
	if n := b.foreign.Load(); n > 0 {
		fmt.Fprintf(stderr, "bench: warning: completed %d todos left in queue %q by another run; use a fresh --queue\n", n, cfg.queue)
	}
	return res, nil
}

// checkEmpty warns when the queue already holds work (needs the read scope;
// skipped silently without it).
func (b *bench) checkEmpty(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := b.client.QueueStats(ctx, &queuev1.QueueStatsRequest{Queue: b.cfg.queue})
	switch {
	case status.Code(err) == codes.PermissionDenied:
	case err != nil:
		fmt.Fprintf(b.stderr, "bench: cannot check queue %q: %v\n", b.cfg.queue, err)
	case st.GetPendingReady()+st.GetPendingScheduled()+st.GetRunning() > 0:
		fmt.Fprintf(b.stderr, "bench: warning: queue %q already holds %d pending and %d running todos; they will be drained too (use a fresh --queue)\n",
			b.cfg.queue, st.GetPendingReady()+st.GetPendingScheduled(), st.GetRunning())
	}
}

// handle is the benchmark's handler: it reports when each trickle todo
// reached it and counts throughput todos; the work itself is empty.
func (b *bench) handle(_ context.Context, todo *queuev1.Todo) error {
	now := time.Now()
	fields := todo.GetPayload().GetFields()
	if fields[benchPayloadRun].GetStringValue() != b.runID {
		b.foreign.Add(1)
		return nil
	}
	stamp, ok := fields[benchPayloadEnqueued]
	if !ok {
		return nil // a throughput todo: nothing to do
	}
	h := handled{at: now}
	if ns, perr := strconv.ParseInt(stamp.GetStringValue(), 10, 64); perr == nil {
		h.seq, h.ok = ns, true
	}
	select {
	case b.latency <- h:
	default: // a redelivery after the trickle loop gave up on it
	}
	return nil
}

func (b *bench) payload(extra map[string]any) (*structpb.Struct, error) {
	m := map[string]any{benchPayloadRun: b.runID}
	for k, v := range extra {
		m[k] = v
	}
	return structpb.NewStruct(m)
}

// enqueueAll stores cfg.todos todos with EnqueueBatch, a few batches at once.
func (b *bench) enqueueAll(ctx context.Context) error {
	const parallel = 4
	p, err := b.payload(nil)
	if err != nil {
		return err
	}
	batches := make(chan int)
	var (
		wg       sync.WaitGroup
		done     atomic.Int64
		errOnce  sync.Once
		firstErr error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range parallel {
		wg.Go(func() {
			for n := range batches {
				reqs := make([]*queuev1.EnqueueRequest, n)
				for i := range reqs {
					reqs[i] = &queuev1.EnqueueRequest{Payload: p}
				}
				rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
				_, err := b.client.EnqueueBatch(rctx, &queuev1.EnqueueBatchRequest{Queue: b.cfg.queue, Requests: reqs})
				rcancel()
				if err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("EnqueueBatch: %w", err); cancel() })
					return
				}
				done.Add(int64(n))
			}
		})
	}
	start := time.Now()
	stopProgress := b.progress(func() string {
		return fmt.Sprintf("bench: enqueued %d/%d", done.Load(), b.cfg.todos)
	})
feed:
	for left := b.cfg.todos; left > 0; left -= b.cfg.batch {
		select {
		case batches <- min(left, b.cfg.batch):
		case <-ctx.Done():
			break feed
		}
	}
	close(batches)
	wg.Wait()
	stopProgress()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	el := time.Since(start)
	fmt.Fprintf(b.stderr, "bench: enqueued %d todos in batches of %d in %s (%.0f/s)\n",
		b.cfg.todos, b.cfg.batch, el.Round(time.Millisecond), float64(b.cfg.todos)/el.Seconds())
	return nil
}

func (b *bench) stats() worker.Stats {
	var s worker.Stats
	for _, w := range b.workers {
		ws := w.Stats()
		s.Claimed += ws.Claimed
		s.Completed += ws.Completed
		s.Failed += ws.Failed
		s.LeaseLost += ws.LeaseLost
		s.AckErrors += ws.AckErrors
		s.ClaimErrors += ws.ClaimErrors
		s.CompleteBatches += ws.CompleteBatches
	}
	return s
}

// drain waits until every enqueued todo was completed and returns the time
// since started.
func (b *bench) drain(ctx context.Context, started time.Time, werr <-chan error) (time.Duration, error) {
	stopProgress := b.progress(func() string {
		s := b.stats()
		el := time.Since(started).Seconds()
		return fmt.Sprintf("bench: drained %d/%d (%.0f/s) claimed=%d complete_batches=%d claim_errors=%d ack_errors=%d lease_lost=%d",
			s.Completed, b.cfg.todos, float64(s.Completed)/el, s.Claimed, s.CompleteBatches, s.ClaimErrors, s.AckErrors, s.LeaseLost)
	})
	defer stopProgress()
	poll := time.NewTicker(500 * time.Microsecond)
	defer poll.Stop()
	last, lastChange := int64(-1), time.Now()
	for {
		s := b.stats()
		if s.Completed >= int64(b.cfg.todos)+b.foreign.Load() {
			return time.Since(started), nil
		}
		if s.Completed != last {
			last, lastChange = s.Completed, time.Now()
		} else if time.Since(lastChange) > stallTimeout {
			return 0, fmt.Errorf("no todo completed for %s (%d/%d done)", stallTimeout, s.Completed, b.cfg.todos)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case err := <-werr:
			return 0, fmt.Errorf("worker stopped: %w", err)
		case <-poll.C:
		}
	}
}

// trickle enqueues cfg.trickle todos one at a time, each after the previous
// one reached a handler. It returns the enqueue→claim latencies the way the
// peers measure them (RESULTS.md: from the enqueue call returning, i.e. its
// commit acknowledged, to the handler starting; negative when the handler
// won the race with the acknowledgement) and, for the log, from the
// enqueue being sent.
func (b *bench) trickle(ctx context.Context, werr <-chan error) (fromAck, fromSend []time.Duration, err error) {
	// Let every worker get back into its long-poll Claim.
	if !sleepCtx(ctx, 200*time.Millisecond) {
		return nil, nil, ctx.Err()
	}
	fromAck = make([]time.Duration, 0, b.cfg.trickle)
	fromSend = make([]time.Duration, 0, b.cfg.trickle)
	var got atomic.Int64
	stopProgress := b.progress(func() string {
		return fmt.Sprintf("bench: trickle %d/%d claimed", got.Load(), b.cfg.trickle)
	})
	defer stopProgress()
	for i := range b.cfg.trickle {
		sent := time.Now()
		p, err := b.payload(map[string]any{benchPayloadEnqueued: strconv.FormatInt(sent.UnixNano(), 10)})
		if err != nil {
			return nil, nil, err
		}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err = b.client.Enqueue(rctx, &queuev1.EnqueueRequest{Queue: b.cfg.queue, Payload: p})
		acked := time.Now()
		cancel()
		if err != nil {
			return nil, nil, fmt.Errorf("Enqueue (trickle %d): %w", i+1, err)
		}
		h, err := b.awaitTrickle(ctx, werr, sent.UnixNano())
		if err != nil {
			return nil, nil, fmt.Errorf("trickle todo %d: %w", i+1, err)
		}
		fromAck = append(fromAck, h.at.Sub(acked))
		fromSend = append(fromSend, h.at.Sub(sent))
		got.Add(1)
	}
	return fromAck, fromSend, nil
}

// awaitTrickle waits for the trickle todo stamped seq to reach a handler.
// Another stamp is a redelivery of an earlier trickle todo and is skipped.
func (b *bench) awaitTrickle(ctx context.Context, werr <-chan error, seq int64) (handled, error) {
	timeout := time.NewTimer(stallTimeout)
	defer timeout.Stop()
	for {
		select {
		case h := <-b.latency:
			switch {
			case !h.ok:
				return h, fmt.Errorf("came back without a readable %s", benchPayloadEnqueued)
			case h.seq == seq:
				return h, nil
			}
		case <-timeout.C:
			return handled{}, fmt.Errorf("not claimed within %s", stallTimeout)
		case err := <-werr:
			return handled{}, fmt.Errorf("worker stopped: %w", err)
		case <-ctx.Done():
			return handled{}, ctx.Err()
		}
	}
}

// progress prints line() to stderr once a second until the returned stop is
// called.
func (b *bench) progress(line func() string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintln(b.stderr, line())
			}
		}
	})
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
