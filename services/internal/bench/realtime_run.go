package bench

// The run of `bench realtime`: subscribe, wait until every stream is live,
// publish at the paced rate, wait for the last deliveries.

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/lifecycle"
)

// rtBench is one run's shared state.
type rtBench struct {
	cfg    benchRealtimeConfig
	run    string
	pad    string
	stderr io.Writer

	subs  []*rtSub
	pubs  []*rtPub
	ended chan *rtSub // subscriptions that broke (capacity: all of them)
	// measureFromNs opens the measured window (UnixNano); events sent before
	// it are the warmup. Set before any data event is published.
	measureFromNs atomic.Int64
}

// rtSub is one subscription.
type rtSub struct {
	addr   string
	client realtimev1.RealtimeServiceClient
	tally  *rtTally
	ready  chan struct{} // closed once the stream has seen the probes
	// Counters the receive loop keeps; distinct mirrors tally.distinct for
	// the progress line and the drain, which read it while the loop runs.
	distinct                      atomic.Int64
	outOfOrder, malformed, others int64
	messages, events              int64 // stream messages with events, and the events in them
	resumes                       int   // streams resumed with after_id
	resumeErr                     error // why the last one ended

	mu  sync.Mutex
	err error // why the stream ended, unless cancelled
}

func (s *rtSub) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

func (s *rtSub) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// rtPub is one publisher.
type rtPub struct {
	idx    int
	addr   string
	client realtimev1.RealtimeServiceClient
	out    rtPublished
	// measured counts publishes sent in the window; late counts slots
	// started behind schedule (the node or this process could not keep up).
	measured, late int
	callLat        []time.Duration // Publish round trips in the window
	firstErr       error
	acked          atomic.Int64 // for the progress line
}

func runBenchRealtime(ctx context.Context, cfg benchRealtimeConfig, stderr io.Writer) (rtResult, error) {
	b := &rtBench{cfg: cfg, run: strconv.FormatInt(time.Now().UnixNano(), 36), stderr: stderr,
		ended: make(chan *rtSub, cfg.subscribers)}
	b.measureFromNs.Store(1<<63 - 1)
	b.pad = strings.Repeat("x", max(0, cfg.size-b.overhead()))

	// One connection per subscriber and per publisher, as separate clients
	// would have; client i connects to node i mod len(addrs).
	var conns []*grpc.ClientConn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	connect := func(i int) (string, realtimev1.RealtimeServiceClient, error) {
		addr := cfg.addrs[i%len(cfg.addrs)]
		conn, err := grpc.NewClient(addr, grpcDialOptions(cfg.tls, cfg.token)...)
		if err != nil {
			return addr, nil, fmt.Errorf("bench realtime: connect %s: %w", addr, err)
		}
		conns = append(conns, conn)
		return addr, realtimev1.NewRealtimeServiceClient(conn), nil
	}
	for i := range cfg.subscribers {
		addr, c, err := connect(i)
		if err != nil {
			return rtResult{}, err
		}
		b.subs = append(b.subs, &rtSub{addr: addr, client: c, tally: newRTTally(cfg.publishers), ready: make(chan struct{})})
	}
	for i := range cfg.publishers {
		addr, c, err := connect(i)
		if err != nil {
			return rtResult{}, err
		}
		b.pubs = append(b.pubs, &rtPub{idx: i, addr: addr, client: c, out: rtPublished{failed: map[int]bool{}}})
	}
	kind := map[bool]string{false: "durable", true: "ephemeral"}[cfg.ephemeral]
	fmt.Fprintf(stderr, "bench: %d subscribers and %d publishers over %d nodes (%s), channel %q, %s events of about %d bytes, %d/s for %s after %s of warmup\n",
		cfg.subscribers, cfg.publishers, len(cfg.addrs), strings.Join(cfg.addrs, ","), cfg.channel, kind, cfg.size, cfg.rate, cfg.duration, cfg.warmup)

	// Subscribe.
	sctx, stopSubs := context.WithCancel(ctx)
	var subsWG sync.WaitGroup
	defer subsWG.Wait()
	defer stopSubs()
	for _, s := range b.subs {
		subsWG.Go(func() { b.receive(sctx, s) })
	}
	if err := b.awaitReady(ctx); err != nil {
		return rtResult{}, err
	}

	// Publish: warmup, then the measured window.
	start := time.Now()
	measureFrom := start.Add(cfg.warmup)
	stop := measureFrom.Add(cfg.duration)
	b.measureFromNs.Store(measureFrom.UnixNano())
	stopProgress := (&bench{stderr: stderr}).progress(b.progressLine(start))
	var pubWG sync.WaitGroup
	for _, p := range b.pubs {
		pubWG.Go(func() { b.publish(ctx, p, start, measureFrom, stop) })
	}
	pubWG.Wait()
	if err := ctx.Err(); err != nil {
		stopProgress()
		return rtResult{}, err
	}

	// Wait for the last deliveries.
	expected := int64(0)
	for _, p := range b.pubs {
		expected += int64(p.out.ok())
	}
	drainStart := time.Now()
	b.drain(ctx, expected)
	stopProgress()
	stopSubs()
	subsWG.Wait()
	fmt.Fprintf(stderr, "bench: publishing stopped; waited %s for the last deliveries\n", time.Since(drainStart).Round(time.Millisecond))
	return b.result(measureFrom, stop)
}

// publish runs publisher p from start until stop (and, in tests, until it
// sent cfg.minEvents). Publishers share one
// schedule: together they send one event every 1/rate, publisher i taking
// slots i, i+P, i+2P… A publisher that falls behind (a Publish slower than
// its interval) sends its next event at once and resumes the schedule from
// there: it never bursts to catch up, so the achieved rate can fall below
// --rate, and the log says so.
func (b *rtBench) publish(ctx context.Context, p *rtPub, start, measureFrom, stop time.Time) {
	rate, n := float64(b.cfg.rate), float64(b.cfg.publishers)
	interval := time.Duration(float64(time.Second) * n / rate)
	next := start.Add(time.Duration(float64(time.Second) * float64(p.idx) / rate))
	for seq := 0; next.Before(stop) || seq < b.cfg.minEvents; seq++ {
		if d := time.Until(next); d > 0 {
			if !lifecycle.Sleep(ctx, d) {
				return
			}
		} else if seq > 0 {
			p.late++
		}
		sent := time.Now()
		req := &realtimev1.PublishRequest{Channel: b.cfg.channel, Kind: rtKindData, Durable: !b.cfg.ephemeral,
			Payload: &structpb.Struct{Fields: map[string]*structpb.Value{
				rtKeyRun:  structpb.NewStringValue(b.run),
				rtKeyPub:  structpb.NewNumberValue(float64(p.idx)),
				rtKeySeq:  structpb.NewNumberValue(float64(seq)),
				rtKeySent: structpb.NewStringValue(strconv.FormatInt(sent.UnixNano(), 10)),
				rtKeyPad:  structpb.NewStringValue(b.pad),
			}}}
		pctx, cancel := context.WithTimeout(ctx, rtCallTimeout)
		_, err := p.client.Publish(pctx, req)
		took := time.Since(sent)
		cancel()
		p.out.sent++
		if err != nil {
			if ctx.Err() != nil {
				p.out.sent--
				return
			}
			p.out.failed[seq] = true
			if p.firstErr == nil {
				p.firstErr = fmt.Errorf("Publish on %s: %w", p.addr, err)
			}
		} else {
			p.acked.Add(1)
		}
		if !sent.Before(measureFrom) {
			p.measured++
			p.callLat = append(p.callLat, took)
		}
		next = next.Add(interval)
		if now := time.Now(); next.Before(now) {
			next = now
		}
	}
}

// drain waits until every subscription has every acknowledged event (all
// but cfg.lossPlanned of them, in tests), or until no delivery arrived for
// cfg.drainQuiet (lost events never come).
func (b *rtBench) drain(ctx context.Context, expected int64) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	last, lastChange := int64(-1), time.Now()
	for {
		var total int64
		complete := true
		for _, s := range b.subs {
			n := s.distinct.Load()
			total += n
			if n < expected {
				complete = false
			}
		}
		if complete || (b.cfg.lossPlanned > 0 && total >= expected*int64(len(b.subs))-b.cfg.lossPlanned) {
			return
		}
		if total != last {
			last, lastChange = total, time.Now()
		} else if time.Since(lastChange) > b.cfg.drainQuiet {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (b *rtBench) progressLine(start time.Time) func() string {
	var lastPub, lastDel int64
	last := start
	return func() string {
		var pub, del int64
		for _, p := range b.pubs {
			pub += p.acked.Load()
		}
		for _, s := range b.subs {
			del += s.distinct.Load()
		}
		now := time.Now()
		el := now.Sub(last).Seconds()
		line := fmt.Sprintf("bench: %5.1fs published %d (%.0f/s), delivered %d (%.0f/s)",
			now.Sub(start).Seconds(), pub, float64(pub-lastPub)/el, del, float64(del-lastDel)/el)
		lastPub, lastDel, last = pub, del, now
		return line
	}
}
