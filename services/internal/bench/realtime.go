package bench

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strings"
	"time"
)

// RealtimeUsage is the command line of `bench realtime`.
const RealtimeUsage = `switchboard bench realtime --publishers P --subscribers S --rate R [--addrs 127.0.0.1:9090[,HOST:PORT...]] [--duration 10s] [--warmup 2s] [--size 128] [--ephemeral] [--max-batch 100] [--channel bench] [--cacert ca.pem | --tls]`

// benchRealtimeConfig is the parsed command line of `bench realtime`.
type benchRealtimeConfig struct {
	addrs       []string // nodes; publishers and subscribers go round-robin over them
	token       string
	channel     string
	publishers  int
	subscribers int
	rate        int           // publishes per second, all publishers together
	duration    time.Duration // measured window
	warmup      time.Duration // publishing at the rate before the window opens
	size        int           // serialized JSON payload, bytes (about)
	ephemeral   bool
	maxBatch    int         // SubscribeRequest.max_batch
	tls         *tls.Config // nil: plaintext
	// drainQuiet ends the wait for the last deliveries once none arrived
	// for this long (rtDrainQuiet).
	drainQuiet time.Duration

	// Hooks for tests, which wait for conditions rather than for time:
	// minEvents has each publisher send at least this many data events
	// however late its slots start (a planned fault at event k needs event
	// k to exist on a loaded machine); lossPlanned ends the wait for the
	// last deliveries once all but this many arrived (the ones a fake node
	// drops never come), so the test need not wait drainQuiet out.
	minEvents   int
	lossPlanned int64
}

// Limits of `bench realtime`'s flags. The payload caps are the server's
// (PublishRequest.payload); maxRTSamples bounds the latency samples kept in
// memory (8 bytes each: 400 MB).
const (
	minRTSize          = 64
	maxRTSizeDurable   = 64 << 10
	maxRTSizeEphemeral = 7 << 10
	maxRTSamples       = 50_000_000
)

var channelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9:._/-]{0,127}$`)

func parseBenchRealtime(args []string, lookup func(string) (string, bool)) (benchRealtimeConfig, error) {
	cfg := benchRealtimeConfig{drainQuiet: rtDrainQuiet}
	var addrs string
	fs := flag.NewFlagSet("bench realtime", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&addrs, "addrs", "127.0.0.1:9090", "gRPC addresses of the nodes, comma-separated")
	fs.StringVar(&cfg.channel, "channel", "bench", "channel every publisher and subscriber uses")
	fs.IntVar(&cfg.publishers, "publishers", 0, "concurrent publishers")
	fs.IntVar(&cfg.subscribers, "subscribers", 0, "subscriptions (the fan-out of every event)")
	fs.IntVar(&cfg.rate, "rate", 0, "publishes per second across all publishers, paced")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "measured window")
	fs.DurationVar(&cfg.warmup, "warmup", 2*time.Second, "publishing before the measured window")
	fs.IntVar(&cfg.size, "size", 128, "payload bytes (serialized JSON object)")
	fs.BoolVar(&cfg.ephemeral, "ephemeral", false, "publish ephemeral events (default: durable)")
	fs.IntVar(&cfg.maxBatch, "max-batch", 100, "most events per stream message the subscribers accept (SubscribeRequest.max_batch; 1: one per message)")
	var tf tlsFlags
	tf.register(fs)
	if err := fs.Parse(args); err != nil {
		return cfg, flagErr(fs, RealtimeUsage, err)
	}
	maxSize := maxRTSizeDurable
	if cfg.ephemeral {
		maxSize = maxRTSizeEphemeral
	}
	for a := range strings.SplitSeq(addrs, ",") {
		cfg.addrs = append(cfg.addrs, strings.TrimSpace(a))
	}
	switch {
	case fs.NArg() != 0:
		return cfg, usageErr("bench realtime: unexpected argument %q", fs.Arg(0))
	case cfg.publishers < 1 || cfg.publishers > 10000:
		return cfg, usageErr("bench realtime: --publishers must be 1–10000")
	case cfg.subscribers < 1 || cfg.subscribers > 10000:
		return cfg, usageErr("bench realtime: --subscribers must be 1–10000")
	case cfg.rate < 1 || cfg.rate > 1_000_000:
		return cfg, usageErr("bench realtime: --rate must be 1–1000000 (publishes per second)")
	case cfg.maxBatch < 1 || cfg.maxBatch > 1000:
		return cfg, usageErr("bench realtime: --max-batch must be 1–1000")
	case cfg.duration <= 0:
		return cfg, usageErr("bench realtime: --duration must be positive")
	case cfg.warmup < 0:
		return cfg, usageErr("bench realtime: --warmup must not be negative")
	case cfg.size < minRTSize || cfg.size > maxSize:
		return cfg, usageErr("bench realtime: --size must be %d–%d for %s events", minRTSize, maxSize, map[bool]string{false: "durable", true: "ephemeral"}[cfg.ephemeral])
	case !channelName.MatchString(cfg.channel):
		return cfg, usageErr("bench realtime: --channel %q is not a channel name (^[A-Za-z0-9][A-Za-z0-9:._/-]{0,127}$)", cfg.channel)
	case float64(cfg.rate)*cfg.duration.Seconds()*float64(cfg.subscribers) > maxRTSamples:
		return cfg, usageErr("bench realtime: --rate × --duration × --subscribers is over %d deliveries to time; shorten the run", maxRTSamples)
	}
	for _, a := range cfg.addrs {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return cfg, usageErr("bench realtime: --addrs: %q is not host:port", a)
		}
	}
	tok, ok := lookup(EnvToken)
	if !ok || tok == "" {
		return cfg, usageErr("bench realtime: set %s to a token with scope agent (or publisher and read)", EnvToken)
	}
	cfg.token = tok
	var err error
	cfg.tls, err = tf.config("bench realtime")
	return cfg, err
}

// Realtime runs `switchboard bench realtime` against running nodes: it
// opens --subscribers Subscribe streams on --channel, round-robin over
// --addrs, and once every stream is live (each has seen a probe event) runs
// --publishers publishers (round-robin too) that together publish --rate
// events per second, evenly spaced, for --warmup and then --duration. Each
// payload carries its publisher, a sequence number and the send time
// (UnixNano); the subscribers, in this process and on its clock, take
// deliver−send. Progress goes to stderr; stdout gets one line:
//
//	RESULT delivered_per_s=<n> p50_ms=<n> p99_ms=<n>
//
// over the deliveries of events sent in the measured window (nearest-rank
// percentiles). Every durable event must reach every subscriber exactly
// once: a lost or duplicated one, a Publish error or a stream that broke
// fails the run (after the RESULT line, since the figures were measured).
func Realtime(ctx context.Context, args []string, stdout io.Writer, lookup func(string) (string, bool)) error {
	cfg, err := parseBenchRealtime(args, lookup)
	if err != nil {
		return err
	}
	res, err := runBenchRealtime(ctx, cfg, os.Stderr)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(stdout, res.line()); err != nil {
		return err
	}
	return res.failure()
}

// Payload keys and kinds of the benchmark's events. A probe tells a
// subscriber its stream is live; data events are timed.
const (
	rtKeyRun   = "run"
	rtKeyPub   = "pub"
	rtKeySeq   = "seq"
	rtKeySent  = "sent_ns"
	rtKeyPad   = "pad"
	rtKindData = "bench"
	rtKindProb = "bench.probe"
	// rtReadyTimeout bounds the wait for every stream to see a probe;
	// rtDrainQuiet ends the wait for stragglers after publishing stops.
	rtReadyTimeout = 30 * time.Second
	rtProbeEvery   = 100 * time.Millisecond
	rtDrainQuiet   = 5 * time.Second
	rtCallTimeout  = 10 * time.Second
	// A subscription is resumed at most rtMaxResumes times, rtResumePause
	// after it ended.
	rtMaxResumes  = 20
	rtResumePause = 20 * time.Millisecond
)
