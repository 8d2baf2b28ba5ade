package realtime

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/lifecycle"
	"github.com/switchboard/switchboard/services/realtime/internal/store"
	"github.com/switchboard/switchboard/services/realtime/internal/wire"
)

// NOTIFY channels. durableChannel carries only "new durable events up to id
// N"; ephemeralChannel carries whole ephemeral events (transport notify).
const (
	durableChannel   = "switchboard_realtime"
	ephemeralChannel = "switchboard_realtime_ephemeral"
)

// relay holds the service's background loops: the durable reader, the
// coalesced "new durable events" notifier, the LISTEN connection that pokes
// the reader (and, with the notify transport, receives ephemeral events) and
// the NOTIFY sender of ephemeral events. Presence upkeep and retention are
// their own lifecycle.Loops (Server.Components).
type relay struct{ s *Server }

// component runs the loops from Start to Stop. The reader first sets its
// cursor (retrying while Postgres is away); Subscribe waits for that, so
// every subscriber sees one consistent high-water mark.
func (c *relay) component() *lifecycle.Goroutines {
	loops := []func(context.Context){c.startReader, c.s.notifier.run, c.listen}
	if c.s.notifyTransport != nil {
		loops = append(loops, c.s.notifyTransport.run)
	}
	return lifecycle.NewGoroutines(Name+"-relay", loops...)
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
