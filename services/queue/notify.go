package queue

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/lifecycle"
	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// notifier coalesces pg_notify: enqueues mark their queue, and one flush per
// window sends a single statement with one notification per marked queue.
// So a queue gets at most one NOTIFY per window however fast it is written,
// and none is ever sent inside an enqueue transaction (NOTIFY takes a
// cluster-wide lock at commit). Marks made while the flusher is not running
// simply wait for it; nothing blocks an RPC.
type notifier struct {
	log    *zap.Logger
	store  *store.Store
	window time.Duration

	mu      sync.Mutex
	pending map[queueKey]struct{}
	kick    chan struct{} // buffer 1: "there is something to flush"
}

func newNotifier(log *zap.Logger, st *store.Store, window time.Duration) *notifier {
	return &notifier{log: log, store: st, window: window, pending: map[queueKey]struct{}{}, kick: make(chan struct{}, 1)}
}

// mark schedules a notification for k.
func (n *notifier) mark(k queueKey) {
	n.mu.Lock()
	n.pending[k] = struct{}{}
	n.mu.Unlock()
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// run flushes until ctx ends, at most once per window.
func (n *notifier) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.kick:
		}
		// Let the window fill: marks arriving meanwhile join this flush.
		t := time.NewTimer(n.window)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		n.flush(ctx)
	}
}

func (n *notifier) flush(ctx context.Context) {
	n.mu.Lock()
	if len(n.pending) == 0 {
		n.mu.Unlock()
		return
	}
	payloads := make([]string, 0, len(n.pending))
	for k := range n.pending {
		payloads = append(payloads, k.payload())
	}
	clear(n.pending)
	n.mu.Unlock()
	// A lost notification only costs latency: other nodes' claims also poll.
	if err := n.store.Notify(ctx, payloads); err != nil && ctx.Err() == nil {
		n.log.Warn("queue notify failed", zap.Error(err))
	}
}

// wakeComponent runs the notifier and the LISTEN connection that turns
// other nodes' notifications into local wake-ups. Stop also releases every
// waiting long-poll Claim, so a draining server does not hold them.
type wakeComponent struct {
	log      *zap.Logger
	store    *store.Store
	waiters  *waiters
	notifier *notifier
	opts     Options
	loops    *lifecycle.Goroutines
}

func newWakeComponent(log *zap.Logger, st *store.Store, w *waiters, n *notifier, o Options) *wakeComponent {
	c := &wakeComponent{log: log, store: st, waiters: w, notifier: n, opts: o}
	c.loops = lifecycle.NewGoroutines(Name+"-wake", n.run, c.listen)
	return c
}

// Name implements lifecycle.Component.
func (c *wakeComponent) Name() string { return c.loops.Name() }

// Start launches the notifier and the listener and returns at once.
func (c *wakeComponent) Start(ctx context.Context) error { return c.loops.Start(ctx) }

// Stop releases waiting claims and stops both loops; safe before Start and
// more than once.
func (c *wakeComponent) Stop(ctx context.Context) error {
	c.waiters.close()
	return c.loops.Stop(ctx)
}

// listen keeps a LISTEN connection up, reconnecting with exponential
// backoff, and wakes local waiters for every notification.
func (c *wakeComponent) listen(ctx context.Context) {
	delay := c.opts.ListenRetryMin
	for ctx.Err() == nil {
		connected := false
		err := c.store.Listen(ctx, func() {
			connected = true
			delay = c.opts.ListenRetryMin
			// Notifications sent while we were not listening are lost.
			c.waiters.wakeAll()
		}, func(p string) {
			if k, ok := parseQueueKey(p); ok {
				c.waiters.wake(k)
			}
		})
		if ctx.Err() != nil {
			return
		}
		c.log.Warn("queue listen connection lost; reconnecting", zap.Error(err), zap.Bool("was_connected", connected), zap.Duration("retry_in", delay))
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(delay*2, c.opts.ListenRetryMax)
	}
}
