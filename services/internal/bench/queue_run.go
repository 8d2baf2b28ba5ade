package bench

// The run of `bench queue`: connect, enqueue, drain with the SDK workers.

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/logging"
	"github.com/switchboard/switchboard/pkg/worker"
)

func runBench(ctx context.Context, cfg benchConfig, stderr io.Writer) (benchResult, error) {
	b := &bench{
		cfg:     cfg,
		runID:   strconv.FormatInt(time.Now().UnixNano(), 36),
		stderr:  stderr,
		latency: make(chan handled, 1),
	}
	nWorkers := (cfg.workers + perWorker - 1) / perWorker
	for range min(nWorkers, maxConns) {
		conn, err := grpc.NewClient(cfg.addr, grpcDialOptions(cfg.tls, cfg.token)...)
		if err != nil {
			return benchResult{}, fmt.Errorf("connect %s: %w", cfg.addr, err)
		}
		defer func() { _ = conn.Close() }()
		b.conns = append(b.conns, conn)
	}
	b.client = queuev1.NewQueueServiceClient(b.conns[0])
	b.checkEmpty(ctx)

	if err := b.setLimits(ctx); err != nil {
		return benchResult{}, err
	}
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
	fmt.Fprintf(stderr, "bench: drained %d todos with %d handlers and a buffer of %d (%d SDK workers, %d connections; %d keys, key_max_running %d; remove_on_complete %t) in %s: %.0f jobs/s\n",
		cfg.todos, cfg.workers, cfg.buffer, nWorkers, len(b.conns), cfg.keys, cfg.keyMax, cfg.removeOnComplete, drain.Round(time.Millisecond), res.jobsPerSec)

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
		keySeq   atomic.Int64
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
					reqs[i] = &queuev1.EnqueueRequest{Payload: p, RemoveOnComplete: b.cfg.removeOnComplete}
					if b.cfg.keys > 0 {
						reqs[i].ConcurrencyKey = "k" + strconv.Itoa(int(keySeq.Add(1))%b.cfg.keys)
					}
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
		s.AcksAbandoned += ws.AcksAbandoned
		s.ClaimErrors += ws.ClaimErrors
		s.CompleteBatches += ws.CompleteBatches
	}
	return s
}

// setLimits sets the queue's key_max_running for a keyed run (with the
// admin credential: the worker's may not).
func (b *bench) setLimits(ctx context.Context) error {
	if b.cfg.keyMax == 0 {
		return nil
	}
	conn, err := grpc.NewClient(b.cfg.addr, grpcDialOptions(b.cfg.tls, b.cfg.adminToken)...)
	if err != nil {
		return fmt.Errorf("connect %s: %w", b.cfg.addr, err)
	}
	defer func() { _ = conn.Close() }()
	_, err = queuev1.NewQueueServiceClient(conn).SetQueueLimits(ctx, &queuev1.SetQueueLimitsRequest{Queue: b.cfg.queue, KeyMaxRunning: int32(b.cfg.keyMax)}) //nolint:gosec // ≤ 1,000,000 (parseBench)
	if err != nil {
		return fmt.Errorf("SetQueueLimits: %w", err)
	}
	fmt.Fprintf(b.stderr, "bench: queue %q limited to %d running per key\n", b.cfg.queue, b.cfg.keyMax)
	return nil
}
