package pgnotify

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/lifecycle"
	sblog "github.com/switchboard/switchboard/pkg/logging"
	"github.com/switchboard/switchboard/pkg/pgnotify/internal/dbsqlc"
)

// MaxPayload is the longest payload PostgreSQL accepts in a notification (in
// its default build: shorter than 8000 bytes).
const MaxPayload = 7999

// maxChannel is the longest channel name: an identifier of NAMEDATALEN-1
// bytes. A longer one would be truncated by the listen side and rejected by
// pg_notify, so the two would never meet.
const maxChannel = 63

// ErrStarted is returned by Subscribe once the Notifier has started: the
// listen connection subscribes to its channels when it connects.
var ErrStarted = errors.New("pgnotify: subscribe before Start")

// Options tune a Notifier; every zero field takes the default named in its
// comment.
type Options struct {
	// Name is the component's name in the lifecycle group and in logs.
	// Default "pgnotify".
	Name string
	// ReconnectMin and ReconnectMax bound the listen connection's reconnect
	// backoff: the first retry waits ReconnectMin, each failed attempt
	// doubles the wait up to ReconnectMax, and a connection that was up
	// starts over at ReconnectMin. Defaults 100 ms and 5 s (other nodes poll
	// meanwhile, so the cap bounds only how long wake-ups stay slow after an
	// outage; one connection per node retrying every 5 s costs nothing).
	ReconnectMin, ReconnectMax time.Duration
	// MaxPerStatement bounds the notifications one pg_notify statement
	// carries (payloads are up to 8 kB each). Default 100.
	MaxPerStatement int
	// SendTimeout bounds one statement, so a stalled server cannot hold the
	// flusher (and every channel behind it) for longer. Default 5 s.
	SendTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = "pgnotify"
	}
	if o.ReconnectMin <= 0 {
		o.ReconnectMin = 100 * time.Millisecond
	}
	if o.ReconnectMax <= 0 {
		o.ReconnectMax = 5 * time.Second
	}
	o.ReconnectMax = max(o.ReconnectMax, o.ReconnectMin)
	if o.MaxPerStatement <= 0 {
		o.MaxPerStatement = 100
	}
	if o.SendTimeout <= 0 {
		o.SendTimeout = 5 * time.Second
	}
	return o
}

// Subscriber receives one channel's notifications. Both functions run on the
// listen goroutine, one call at a time across all subscribers, and must not
// block.
type Subscriber struct {
	// OnNotify is called with each notification's payload. Required.
	OnNotify func(payload string)
	// OnConnect, when set, is called each time the listen connection is
	// established (the first time and after every reconnect), once all
	// channels are listened to. Notifications sent while it was down are
	// lost: re-read whatever they stand for.
	OnConnect func()
}

// Notifier is a lifecycle.Component: one listen connection per node with
// fan-out by channel, and one coalescing post-commit sender. Build it with
// New, subscribe and create senders, then Start it; Stop is safe before
// Start and more than once.
type Notifier struct {
	log   *zap.Logger
	pool  *pgxpool.Pool
	opts  Options
	q     *dbsqlc.Queries
	out   *outbox
	loops *lifecycle.Goroutines

	mu      sync.Mutex
	started bool
	subs    map[string][]Subscriber // frozen at Start

	pid atomic.Uint32 // the listen backend's pid while connected (tests)
}

// New returns a Notifier over pool (the listen connection is taken from it
// and never returned; statements run on it). It starts nothing.
func New(log *zap.Logger, pool *pgxpool.Pool, opts Options) *Notifier {
	o := opts.withDefaults()
	n := &Notifier{
		log:  log.With(sblog.Component(o.Name)),
		pool: pool, opts: o, q: dbsqlc.New(),
		out:  newOutbox(time.Now),
		subs: map[string][]Subscriber{},
	}
	n.loops = lifecycle.NewGoroutines(o.Name, n.listen, n.flush)
	return n
}

// Subscribe adds s to channel's subscribers (a channel may have several;
// each gets every notification). It must be called before Start: it returns
// ErrStarted afterwards, and an error for an invalid channel name or a nil
// OnNotify.
func (n *Notifier) Subscribe(channel string, s Subscriber) error {
	if err := validChannel(channel); err != nil {
		return err
	}
	if s.OnNotify == nil {
		return fmt.Errorf("pgnotify: subscriber of %q has no OnNotify", channel)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.started {
		return ErrStarted
	}
	n.subs[channel] = append(n.subs[channel], s)
	return nil
}

// Coalescer returns a sender of coalesced notifications on channel with the
// given window (see Coalescer). It may be called at any time. channel must
// be a valid name (1 to 63 bytes) and window positive: both are constants at
// every call site, so anything else is a programming error and panics, as
// http.ServeMux does for a bad pattern.
func (n *Notifier) Coalescer(channel string, window time.Duration) *Coalescer {
	if err := validChannel(channel); err != nil {
		panic(err)
	}
	if window <= 0 {
		panic(fmt.Sprintf("pgnotify: coalescer window for %q must be positive", channel))
	}
	c := &Coalescer{ob: n.out, log: n.log, channel: channel, window: window, pending: map[string]string{}}
	n.out.addCoalescer(c)
	return c
}

// Queue returns a bounded FIFO sender on channel holding up to size
// payloads (see Queue). It may be called at any time; like Coalescer it
// panics on an invalid channel or a size below 1.
func (n *Notifier) Queue(channel string, size int) *Queue {
	if err := validChannel(channel); err != nil {
		panic(err)
	}
	if size < 1 {
		panic(fmt.Sprintf("pgnotify: queue size for %q must be at least 1", channel))
	}
	q := &Queue{ob: n.out, log: n.log, channel: channel, ch: make(chan string, size)}
	n.out.addQueue(q)
	return q
}

// Name implements lifecycle.Component.
func (n *Notifier) Name() string { return n.opts.Name }

// Start implements lifecycle.Component: it launches the listen loop (when
// anything is subscribed) and the flusher, and returns at once. Later
// Subscribe calls fail.
func (n *Notifier) Start(ctx context.Context) error {
	n.mu.Lock()
	n.started = true
	n.mu.Unlock()
	return n.loops.Start(ctx)
}

// Stop implements lifecycle.Component: it closes the listen connection and
// ends the flusher (pending notifications are dropped: receivers poll),
// waiting until ctx ends. Safe before Start and more than once.
func (n *Notifier) Stop(ctx context.Context) error { return n.loops.Stop(ctx) }

func validChannel(c string) error {
	if c == "" || len(c) > maxChannel {
		return fmt.Errorf("pgnotify: channel %q must be 1 to %d bytes", c, maxChannel)
	}
	return nil
}

func channelField(c string) zap.Field { return zap.String("notify_channel", c) }
