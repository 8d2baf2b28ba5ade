package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// Handler does the work of one todo. Its context is cancelled when the lease
// is lost or when shutdown's grace period runs out. Return nil to complete
// the todo, an error to fail it (retried later), Permanent(err) to
// dead-letter it, or RetryAfter(err, d) to fail it with a retry delay.
type Handler func(ctx context.Context, todo *queuev1.Todo) error

// Options tune a Worker. The zero value of every field means its default.
type Options struct {
	// WorkerID identifies this process to the server (Todo.lease_owner),
	// 1–255 characters. Default "hostname-pid".
	WorkerID string
	// Concurrency is the most todos handled at once. Default 10. Todos
	// whose handler succeeded and whose completion is queued for
	// CompleteBatch (at most Concurrency more, plus the batches in flight)
	// do not count: their slot is claimed again at once.
	Concurrency int
	// Buffer is how many claimed todos may wait for a free handler, 0–1000.
	// Default 0. With a buffer a handler that frees up starts its next todo
	// at once instead of after a Claim round trip, which pays off for short
	// handlers at high rates (`bench queue`: +45% at Concurrency 200 with
	// Buffer 200). It costs fairness for long ones: a buffered todo waits
	// here while another worker might be idle. Buffered todos' leases are
	// renewed like running ones, and those not started when Run shuts down
	// are released.
	Buffer int
	// Prefetch is the most todos asked for in one Claim, 1–1000; the worker
	// never asks for more than its free capacity (Concurrency + Buffer).
	// Default that capacity (capped at 1000).
	Prefetch int
	// LeaseSeconds is the lease asked for on Claim and on every Heartbeat,
	// 1–3600. Default 30.
	LeaseSeconds int32
	// HeartbeatInterval is how often each held todo's lease is renewed
	// (waiting, running, or with its ack being retried).
	// Default LeaseSeconds/3.
	HeartbeatInterval time.Duration
	// Wait is the long-poll duration of a Claim when the queue is empty,
	// up to 60 s. Default 10 s.
	Wait time.Duration
	// ShutdownGrace is how long running handlers may go on after Run's
	// context is cancelled before their contexts are cancelled and their
	// todos released. Default 10 s.
	ShutdownGrace time.Duration
	// BackoffMin and BackoffMax bound the jittered exponential backoff after
	// a failed Claim. Defaults 100 ms and 10 s.
	BackoffMin, BackoffMax time.Duration
	// AckBatch is the most completions sent in one CompleteBatch, 1–1000.
	// Default 500: it matters when every CompleteBatch in flight is busy
	// and completions queue up (a busy worker), where one large statement
	// is much cheaper for the database than several small ones (`bench
	// queue`: about +10% throughput over 100). A quiet worker's batches
	// stay small anyway, bounded by AckDelay.
	AckBatch int
	// AckDelay is how long a completion may wait for others to share its
	// CompleteBatch; a batch is sent when it holds AckBatch items or
	// AckDelay after its first item, whichever comes first. Default 2 ms;
	// NoAckDelay (any negative value) sends what is queued at once, without
	// waiting. At most 1 s.
	AckDelay time.Duration
	// AckTimeout bounds how long one todo's Complete, Fail or Release is
	// retried after transient errors while heartbeats keep its lease alive
	// (retries stop earlier when the lease would expire: see the package
	// documentation). Default 5 minutes.
	AckTimeout time.Duration
	// OnAck, when set, is told the final outcome of every claimed todo,
	// exactly once, after the server confirmed it (Completed, Failed,
	// DeadLettered, Released) or when it said the lease is gone (LeaseLost)
	// or the SDK gave up without a confirmation (Unconfirmed). err is nil
	// for the confirmed outcomes and says why otherwise. Tie exactly-once
	// side effects to Completed (see the package documentation). OnAck is
	// called from several goroutines at once, possibly after Run's context
	// is cancelled but always before Run returns; it must not block for
	// long (it holds up the acks behind it) nor call Run.
	OnAck func(todo *queuev1.Todo, outcome Outcome, err error)
	// Logger receives warnings and debug events. Default: no logging.
	Logger *zap.Logger
	// TracerProvider makes each handler's span ("process <queue>", in the
	// trace of the request that created the todo: Todo.trace_parent) and
	// the spans of batched acks. Default: the global provider
	// (otel.GetTracerProvider), a no-op one unless the application set one.
	TracerProvider trace.TracerProvider
}

// NoAckDelay as Options.AckDelay sends completions without waiting for
// more to batch with them (the zero value means the default delay).
const NoAckDelay time.Duration = -1

// Limits of the QueueService contract.
const (
	maxAckBatch     = 1000
	maxAckDelay     = time.Second
	defaultAckBatch = 500
	defaultAckDelay = 2 * time.Millisecond
	// defaultAckTimeout is Options.AckTimeout's default.
	defaultAckTimeout = 5 * time.Minute
	maxPrefetch       = 1000
	maxBuffer         = 1000
	maxLeaseSeconds   = 3600
	maxWait           = 60 * time.Second
	maxErrorLen       = 4096
	// claimSlack is added to Wait for the Claim RPC deadline.
	claimSlack = 10 * time.Second
)

// ErrLeaseLost is the cause of a handler context cancelled because the
// server reported the lease stale (context.Cause(ctx) returns it).
var ErrLeaseLost = errors.New("worker: lease lost")

// errShutdown is the cause of a handler context cancelled when the shutdown
// grace period ran out.
var errShutdown = errors.New("worker: shutdown grace period over")

// Worker drains one queue. Create it with New and start it with Run.
type Worker struct {
	conn    grpc.ClientConnInterface
	client  queuev1.QueueServiceClient
	queue   string
	handler Handler
	opts    Options
	log     *zap.Logger
	stats   counters
	running atomic.Bool
	tracer  trace.Tracer
}

// New returns a Worker that runs handler over todos claimed from queue
// through conn. Options are checked by Run.
func New(conn grpc.ClientConnInterface, queue string, handler Handler, opts Options) *Worker {
	w := &Worker{conn: conn, queue: queue, handler: handler, opts: withDefaults(opts)}
	w.tracer = tracerProvider(w.opts.TracerProvider).Tracer(tracerName)
	if conn != nil {
		w.client = queuev1.NewQueueServiceClient(conn)
	}
	w.log = w.opts.Logger.With(zap.String("queue", queue), zap.String("worker_id", w.opts.WorkerID))
	return w
}

// Stats returns the Worker's counters; safe to call at any time.
func (w *Worker) Stats() Stats { return w.stats.snapshot() }

func withDefaults(o Options) Options {
	if o.WorkerID == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "worker"
		}
		o.WorkerID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if o.Concurrency == 0 {
		o.Concurrency = 10
	}
	if o.Prefetch == 0 {
		o.Prefetch = min(o.Concurrency+max(o.Buffer, 0), maxPrefetch)
	}
	if capacity := o.Concurrency + max(o.Buffer, 0); o.Prefetch > capacity && o.Concurrency > 0 {
		o.Prefetch = capacity
	}
	if o.LeaseSeconds == 0 {
		o.LeaseSeconds = 30
	}
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = time.Duration(o.LeaseSeconds) * time.Second / 3
	}
	if o.Wait == 0 {
		o.Wait = 10 * time.Second
	}
	if o.ShutdownGrace == 0 {
		o.ShutdownGrace = 10 * time.Second
	}
	if o.BackoffMin == 0 {
		o.BackoffMin = 100 * time.Millisecond
	}
	if o.BackoffMax == 0 {
		o.BackoffMax = 10 * time.Second
	}
	if o.BackoffMax < o.BackoffMin {
		o.BackoffMax = o.BackoffMin
	}
	if o.AckBatch == 0 {
		o.AckBatch = defaultAckBatch
	}
	if o.AckDelay == 0 {
		o.AckDelay = defaultAckDelay
	}
	if o.AckTimeout == 0 {
		o.AckTimeout = defaultAckTimeout
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return o
}

func (w *Worker) validate() error {
	o := w.opts
	switch {
	case w.client == nil:
		return errors.New("worker: nil connection")
	case w.handler == nil:
		return errors.New("worker: nil handler")
	case w.queue == "":
		return errors.New("worker: empty queue name")
	case len(o.WorkerID) > 255:
		return errors.New("worker: WorkerID longer than 255 characters")
	case o.Concurrency < 0:
		return fmt.Errorf("worker: Concurrency %d is negative", o.Concurrency)
	case o.Buffer < 0 || o.Buffer > maxBuffer:
		return fmt.Errorf("worker: Buffer %d is outside 0–%d", o.Buffer, maxBuffer)
	case o.Prefetch < 0 || o.Prefetch > maxPrefetch:
		return fmt.Errorf("worker: Prefetch %d is outside 1–%d", o.Prefetch, maxPrefetch)
	case o.LeaseSeconds < 0 || o.LeaseSeconds > maxLeaseSeconds:
		return fmt.Errorf("worker: LeaseSeconds %d is outside 1–%d", o.LeaseSeconds, maxLeaseSeconds)
	case o.HeartbeatInterval < 0:
		return errors.New("worker: negative HeartbeatInterval")
	case o.Wait < 0 || o.Wait > maxWait:
		return fmt.Errorf("worker: Wait %s is outside 0–%s", o.Wait, maxWait)
	case o.AckBatch < 0 || o.AckBatch > maxAckBatch:
		return fmt.Errorf("worker: AckBatch %d is outside 1–%d", o.AckBatch, maxAckBatch)
	case o.AckDelay > maxAckDelay:
		return fmt.Errorf("worker: AckDelay %s is over %s", o.AckDelay, maxAckDelay)
	case o.ShutdownGrace < 0 || o.BackoffMin < 0 || o.AckTimeout < 0:
		return errors.New("worker: negative ShutdownGrace, BackoffMin or AckTimeout")
	}
	return nil
}

// Run claims and handles todos until ctx is cancelled, then shuts down
// gracefully (see the package documentation) and returns nil. It returns an
// error early only for a mistake that retrying cannot fix: invalid Options,
// or a Claim answered INVALID_ARGUMENT, UNAUTHENTICATED, PERMISSION_DENIED or
// UNIMPLEMENTED (in-flight todos are still finished or released first).
// A Worker runs at most one Run at a time.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.validate(); err != nil {
		return err
	}
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("worker: Run is already running")
	}
	defer w.running.Store(false)

	// Handlers outlive ctx by up to ShutdownGrace; base keeps ctx's values.
	base, cancelHandlers := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelHandlers(nil)

	var wg sync.WaitGroup
	hb := w.startHeartbeater(base)
	r := &run{
		hb:       hb,
		acks:     w.startAcker(ctx, hb),
		freed:    make(chan struct{}, w.opts.Concurrency+w.opts.Buffer),
		work:     make(chan *lease, w.opts.Concurrency+w.opts.Buffer),
		stopping: ctx.Done(),
	}
	fatal := w.claimLoop(ctx, base, r, &wg)
	close(r.work) // nothing is dispatched any more: idle handler goroutines exit

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	grace := time.NewTimer(w.opts.ShutdownGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		w.log.Info("shutdown grace period over; cancelling running handlers")
		cancelHandlers(errShutdown)
		<-done
	}
	// Every handler has returned, its Fail or Release is settled and its
	// completion is queued; stop flushes and waits for the sends and their
	// retries (so Stats are final and every OnAck was called on return),
	// then the heartbeater, which renewed the leases meanwhile, stops.
	r.acks.stop()
	r.hb.stop()
	return fatal
}

// run is the state of one Run shared by its goroutines.
type run struct {
	hb    *heartbeater
	acks  *acker
	freed chan struct{} // one token per handler slot given back
	// work queues todos for the handler goroutines once Concurrency of
	// them run (see dispatch).
	work chan *lease
	// handlers is the number of handler goroutines; only claimLoop uses it.
	handlers int
	// stopping is closed when Run's context ends: todos not yet started are
	// released instead of run.
	stopping <-chan struct{}
}
