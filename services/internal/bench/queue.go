package bench

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/worker"
)

// QueueUsage is the command line of `bench queue`.
const QueueUsage = `switchboard bench queue --todos N --workers W [--buffer B] [--addr 127.0.0.1:9090] [--queue bench] [--batch 100] [--trickle 1000] [--keys K --key-max-running M] [--remove-on-complete] [--cacert ca.pem | --tls]`

// EnvAdminToken is the credential `bench queue --key-max-running` sets the
// queue's limits with (SetQueueLimits needs the tenant's admin scope, which
// the worker credential in EnvToken should not have).
const EnvAdminToken = "SWITCHBOARD_ADMIN_TOKEN"

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
	tls     *tls.Config
	// keys > 0 spreads the phase-1 todos over that many concurrency keys
	// (round-robin); keyMax > 0 limits each key to that many running
	// (SetQueueLimits, with adminToken) before they are enqueued.
	keys, keyMax int
	adminToken   string
	// removeOnComplete enqueues every todo with remove_on_complete, as
	// graphile-worker deletes a job when it completes.
	removeOnComplete bool
}

var queueName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// parseBench parses the words after `bench queue`.
func parseBench(args []string, lookup func(string) (string, bool)) (benchConfig, error) {
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
	fs.IntVar(&cfg.keys, "keys", 0, "concurrency keys the todos are spread over (0: none)")
	fs.IntVar(&cfg.keyMax, "key-max-running", 0, "the queue's key_max_running (0: no limit; needs "+EnvAdminToken+")")
	fs.BoolVar(&cfg.removeOnComplete, "remove-on-complete", false, "enqueue with remove_on_complete: a completion deletes its todo (as graphile-worker does)")
	var tf tlsFlags
	tf.register(fs)
	if err := fs.Parse(args); err != nil {
		return benchConfig{}, flagErr(fs, QueueUsage, err)
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
	case cfg.keys < 0 || cfg.keyMax < 0 || cfg.keyMax > 1_000_000:
		return benchConfig{}, usageErr("bench queue: --keys must be ≥ 0 and --key-max-running 0–1000000")
	case cfg.keyMax > 0 && cfg.keys == 0:
		return benchConfig{}, usageErr("bench queue: --key-max-running needs --keys")
	case !queueName.MatchString(cfg.queue):
		return benchConfig{}, usageErr("bench queue: --queue %q is not a queue name (^[a-z0-9][a-z0-9._-]{0,62}$)", cfg.queue)
	}
	tok, ok := lookup(EnvToken)
	if !ok || tok == "" {
		return benchConfig{}, usageErr("bench queue: set %s to a token with scopes agent,publisher", EnvToken)
	}
	cfg.token = tok
	if cfg.keyMax > 0 {
		if cfg.adminToken, ok = lookup(EnvAdminToken); !ok || cfg.adminToken == "" {
			return benchConfig{}, usageErr("bench queue: --key-max-running: set %s to a token with scope admin in the same tenant", EnvAdminToken)
		}
	}
	var err error
	cfg.tls, err = tf.config("bench queue")
	return cfg, err
}

// Queue runs `switchboard bench queue …` (args are the words after "queue")
// against a running node: enqueue --todos todos and drain them with --workers
// concurrent handlers through pkg/worker (throughput), then enqueue --trickle
// todos one at a time while the workers wait in Claim (enqueue→claim
// latency). Progress goes to stderr; stdout gets one line:
//
//	RESULT jobs_per_s=<n> claim_p50_ms=<n> claim_p95_ms=<n> claim_p99_ms=<n>
func Queue(ctx context.Context, args []string, stdout io.Writer, lookup func(string) (string, bool)) error {
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
