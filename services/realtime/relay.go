package realtime

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/services/realtime/internal/store"
	"github.com/switchboard/switchboard/services/realtime/internal/wire"
)

// NOTIFY channels. durableChannel carries only "new durable events up to id
// N"; ephemeralChannel carries whole ephemeral events (transport notify).
const (
	durableChannel   = "switchboard_realtime"
	ephemeralChannel = "switchboard_realtime_ephemeral"
)

// relay is the service's background component: the durable reader, the
// coalesced "new durable events" notifier, the LISTEN connection that pokes
// the reader (and, with the notify transport, receives ephemeral events),
// the NOTIFY sender of ephemeral events, presence upkeep and retention.
type relay struct {
	s *Server

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Name implements lifecycle.Component.
func (c *relay) Name() string { return Name + "-relay" }

// Start launches the loops and returns. The reader first sets its cursor
// (retrying while Postgres is away); Subscribe waits for that, so every
// subscriber sees one consistent high-water mark.
func (c *relay) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		return nil
	}
	run, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel, c.done = cancel, make(chan struct{})
	var wg sync.WaitGroup
	loops := []func(context.Context){c.startReader, c.s.notifier.run, c.listen, c.s.presenceLoop, c.s.retentionLoop}
	if c.s.notifyTransport != nil {
		loops = append(loops, c.s.notifyTransport.run)
	}
	for _, f := range loops {
		wg.Go(func() { f(run) })
	}
	go func() { wg.Wait(); close(c.done) }()
	return nil
}

// startReader initialises the reader, retrying with backoff, marks the
// service ready, then runs the reader.
func (c *relay) startReader(ctx context.Context) {
	delay := 100 * time.Millisecond
	for {
		err := c.s.reader.init(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		c.s.log.Warn("realtime reader cannot start yet; retrying", zap.Error(err), zap.Duration("retry_in", delay))
		if !sleep(ctx, delay) {
			return
		}
		delay = min(delay*2, 5*time.Second)
	}
	close(c.s.ready)
	c.s.reader.run(ctx)
}

// Stop ends the loops; open streams are ended by the gRPC server's drain.
func (c *relay) Stop(ctx context.Context) error {
	c.mu.Lock()
	cancel, done := c.cancel, c.done
	c.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// listen keeps the LISTEN connection up. After every (re)connect the reader
// is poked: notifications sent while it was down are lost, the rows are not.
func (c *relay) listen(ctx context.Context) {
	delay := 100 * time.Millisecond
	channels := []string{durableChannel}
	if c.s.notifyTransport != nil {
		channels = append(channels, ephemeralChannel)
	}
	for ctx.Err() == nil {
		err := c.s.store.Listen(ctx, channels, func() {
			delay = 100 * time.Millisecond
			c.s.reader.poke()
		}, func(channel, payload string) {
			switch channel {
			case durableChannel:
				c.s.reader.poke()
			case ephemeralChannel:
				var e wire.Ephemeral
				if err := json.Unmarshal([]byte(payload), &e); err != nil {
					c.s.log.Warn("unreadable ephemeral notification", zap.Error(err))
					return
				}
				c.s.deliverRemote(e)
			}
		})
		if ctx.Err() != nil {
			return
		}
		c.s.log.Warn("realtime listen connection lost; reconnecting", zap.Error(err), zap.Duration("retry_in", delay))
		if !sleep(ctx, delay) {
			return
		}
		delay = min(delay*2, 5*time.Second)
	}
}

// durableNotifier coalesces "new durable events" notifications: a publish
// marks the newest id, and one NOTIFY per window tells every node, after the
// commit and never inside it (NOTIFY takes a cluster-wide lock at commit).
type durableNotifier struct {
	log    *zap.Logger
	store  *store.Store
	window time.Duration

	mu   sync.Mutex
	upto int64
	kick chan struct{}
}

func newDurableNotifier(log *zap.Logger, st *store.Store, window time.Duration) *durableNotifier {
	return &durableNotifier{log: log, store: st, window: window, kick: make(chan struct{}, 1)}
}

func (n *durableNotifier) mark(id int64) {
	n.mu.Lock()
	n.upto = max(n.upto, id)
	n.mu.Unlock()
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

func (n *durableNotifier) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.kick:
		}
		if !sleep(ctx, n.window) {
			return
		}
		n.mu.Lock()
		upto := n.upto
		n.mu.Unlock()
		// A lost notification costs latency only: readers also poll.
		if err := n.store.Notify(ctx, durableChannel, []string{strconv.FormatInt(upto, 10)}); err != nil && ctx.Err() == nil {
			n.log.Warn("realtime notify failed", zap.Error(err))
		}
	}
}
