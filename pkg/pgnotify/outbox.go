package pgnotify

import (
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// dropLogEvery rate-limits the WARN about a full queue: the first drop and
// then one line per this many (a full queue means a flood, and a line per
// dropped payload would add to it).
const dropLogEvery = 1000

// outbox is everything waiting to be sent: the coalescers' pending marks and
// the queues' payloads, and the decision of what is due when. It does no I/O
// and reads time only through now, so its logic is tested without a
// database or a real clock.
type outbox struct {
	now  func() time.Time
	kick chan struct{} // buffer 1: something became pending

	mu         sync.Mutex // guards the two slices, not their contents
	coalescers []*Coalescer
	queues     []*Queue
}

func newOutbox(now func() time.Time) *outbox {
	return &outbox{now: now, kick: make(chan struct{}, 1)}
}

func (o *outbox) addCoalescer(c *Coalescer) {
	o.mu.Lock()
	o.coalescers = append(o.coalescers, c)
	o.mu.Unlock()
}

func (o *outbox) addQueue(q *Queue) {
	o.mu.Lock()
	o.queues = append(o.queues, q)
	o.mu.Unlock()
}

// wake tells the flusher to look again, without blocking.
func (o *outbox) wake() {
	select {
	case o.kick <- struct{}{}:
	default: // a kick is already pending
	}
}

// batch is the notifications of one flush, in send order; from[i] is the
// Queue notification i came from (nil for a coalesced one), so a failed
// statement is counted against the queues it dropped.
type batch struct {
	channels, payloads []string
	from               []*Queue
}

func (b *batch) add(channel, payload string, from *Queue) {
	b.channels = append(b.channels, channel)
	b.payloads = append(b.payloads, payload)
	b.from = append(b.from, from)
}

func (b *batch) reset() {
	b.channels, b.payloads = b.channels[:0], b.payloads[:0]
	clear(b.from) // drop the references
	b.from = b.from[:0]
}

// collect moves everything due at now into b: every coalescer whose window
// has passed (each by its own window, counted from its first pending mark)
// and every payload queued so far. next is when the earliest coalescer that
// is pending but not yet due will be (zero when there is none).
func (o *outbox) collect(now time.Time, b *batch) (next time.Time) {
	o.mu.Lock()
	// Appends never touch elements below the lengths read here.
	cs, qs := o.coalescers, o.queues
	o.mu.Unlock()
	for _, c := range cs {
		if due, ok := c.take(now, b); !ok && !due.IsZero() && (next.IsZero() || due.Before(next)) {
			next = due
		}
	}
	for _, q := range qs {
		// The flusher is the only receiver, so these n are there to take.
		for n := len(q.ch); n > 0; n-- {
			b.add(q.channel, <-q.ch, q)
		}
	}
	return next
}

// Coalescer sends at most one notification per key per window on its
// channel; see Notifier.Coalescer. Safe for concurrent use.
type Coalescer struct {
	ob      *outbox
	log     *zap.Logger
	channel string
	window  time.Duration

	mu      sync.Mutex
	pending map[string]string // key → latest payload
	since   time.Time         // first pending mark; zero when none
}

// Mark schedules a notification for key carrying payload, to be sent once
// the window that started with the first pending mark has passed. Marking a
// key already pending replaces its payload (the latest wins). Call it after
// the change it announces has committed. It never blocks on the database.
// A payload longer than MaxPayload is a programming error: it is logged and
// dropped, since it would fail the whole statement it went into.
func (c *Coalescer) Mark(key, payload string) {
	if len(payload) > MaxPayload {
		c.log.Warn("notification payload too long; dropped", channelField(c.channel), zap.Int("bytes", len(payload)))
		return
	}
	c.mu.Lock()
	c.pending[key] = payload
	first := c.since.IsZero()
	if first {
		c.since = c.ob.now()
	}
	c.mu.Unlock()
	if first { // later marks join a flush that is already scheduled
		c.ob.wake()
	}
}

// take moves c's pending marks into b when they are due at now (ok). When
// they are not, due is when they will be (zero: nothing pending).
func (c *Coalescer) take(now time.Time, b *batch) (due time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.since.IsZero() {
		return time.Time{}, false
	}
	due = c.since.Add(c.window)
	if now.Before(due) {
		return due, false
	}
	for _, p := range c.pending {
		b.add(c.channel, p, nil)
	}
	clear(c.pending)
	c.since = time.Time{}
	return due, true
}

// Queue sends each payload as its own notification on its channel, first in
// first out, best effort; see Notifier.Queue. Safe for concurrent use.
type Queue struct {
	ob      *outbox
	log     *zap.Logger
	channel string
	ch      chan string
	dropped atomic.Int64
}

// Send queues payload and reports whether it was taken. It never blocks: a
// full queue (or a payload longer than MaxPayload) drops it, counts it in
// Dropped and logs a rate-limited WARN. Call it after the change it
// announces has committed. Payloads identical to another in the same flush
// may reach listeners once (PostgreSQL folds duplicates per statement).
func (q *Queue) Send(payload string) bool {
	if len(payload) > MaxPayload {
		q.drop(1, "payload too long")
		return false
	}
	select {
	case q.ch <- payload:
		q.ob.wake()
		return true
	default:
		q.drop(1, "queue full")
		return false
	}
}

// Dropped is how many payloads were dropped so far: refused by Send, or
// lost with a statement that failed.
func (q *Queue) Dropped() int64 { return q.dropped.Load() }

// drop counts n dropped payloads and logs on the first and every
// dropLogEvery-th.
func (q *Queue) drop(n int64, why string) {
	total := q.dropped.Add(n)
	if (total-n)/dropLogEvery != total/dropLogEvery || total == n {
		q.log.Warn("queued notifications dropped", channelField(q.channel),
			zap.String("reason", why), zap.Int64("dropped_total", total))
	}
}
