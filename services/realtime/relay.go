package realtime

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/lifecycle"
	"github.com/switchboard/switchboard/pkg/pgnotify"
)

// NOTIFY channels. durableChannel carries only "new durable events up to id
// N"; ephemeralChannel carries whole ephemeral events (transport notify).
const (
	durableChannel   = "switchboard_realtime"
	ephemeralChannel = "switchboard_realtime_ephemeral"
)

// useNotifier connects the service to n, the node's notifier (or, when the
// caller gave none, a private one over pool that Components then runs). The
// durable path: a publish marks the newest id on a coalescer (one NOTIFY per
// NotifyWindow, after the commit), and every node's reader is poked by it,
// and on every (re)connect of the listen connection, since notifications
// sent while it was down are lost (the rows are not). With the notify
// transport, ephemeral events go out on a bounded queue and come in through
// the same connection (ephemeral.go).
func (s *Server) useNotifier(log *zap.Logger, pool *pgxpool.Pool, n *pgnotify.Notifier) {
	if n == nil {
		n = pgnotify.New(log, pool, pgnotify.Options{Name: Name + "-notifier"})
		s.ownNotifier = n
	}
	s.durable = n.Coalescer(durableChannel, s.opts.NotifyWindow)
	err := n.Subscribe(durableChannel, pgnotify.Subscriber{
		OnNotify:  s.newDurable,
		OnConnect: s.reader.poke,
	})
	if err == nil && s.transport == nil {
		s.ephemeralOut = n.Queue(ephemeralChannel, s.opts.EphemeralQueue)
		err = n.Subscribe(ephemeralChannel, pgnotify.Subscriber{OnNotify: s.receiveEphemeral})
	}
	if err != nil {
		// Only a wiring bug gets here (the node builds its services before
		// it starts the notifier), and New has no error to return.
		panic(fmt.Sprintf("realtime: %v", err))
	}
}

// newDurable handles a "durable events up to id N" notification: it pokes
// the reader unless the reader has already dispatched every id up to N. A
// node's own publishes poke its reader at once (insertDurable) and come back
// to it as notifications that announce nothing new: measured at full load,
// a quarter of all reads found no rows. A payload that is not an id pokes
// (the reader reads the table whatever a notification says).
func (s *Server) newDurable(payload string) {
	if id, err := strconv.ParseInt(payload, 10, 64); err == nil && id <= s.hub.position() {
		return
	}
	s.reader.poke()
}

// markDurable tells the other nodes, coalesced, that durable events up to
// id exist. The payload is the newest id marked so far: a reader already past
// it skips the notification (newDurable), any other reads the table.
func (s *Server) markDurable(id int64) {
	newest := s.newestID.Load()
	for id > newest && !s.newestID.CompareAndSwap(newest, id) {
		newest = s.newestID.Load()
	}
	s.durable.Mark("", strconv.FormatInt(max(id, newest), 10))
}

// relay is the durable reader's component. Presence upkeep and retention are
// their own lifecycle.Loops, notifications the notifier's (Server.Components).
type relay struct{ s *Server }

// component runs the reader from Start to Stop. The reader first sets its
// cursor (retrying while Postgres is away); Subscribe waits for that, so
// every subscriber sees one consistent high-water mark.
func (c *relay) component() *lifecycle.Goroutines {
	return lifecycle.NewGoroutines(Name+"-relay", c.startReader)
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
		if !lifecycle.Sleep(ctx, delay) {
			return
		}
		delay = min(delay*2, 5*time.Second)
	}
	close(c.s.ready)
	c.s.reader.run(ctx)
}
