// Package groupcommit merges concurrent single-item writes into batch
// statements (group commit): callers hand in one item each and get that
// item's own result, returned only after the statement that carried it
// ended, while the database sees one statement, and so one commit, per
// group of concurrent items.
//
// How a flush is shaped:
//   - the window starts when the oldest queued item arrived; the flush runs
//     when it has passed, or at once when MaxItems are queued. A zero
//     window adds no latency: a flush takes whatever is queued right now.
//   - one flush at a time (or Flushers): items arriving while a flush's
//     statements run queue up for the next one, so batches grow with load
//     by themselves and cost nothing when it is light.
//   - items are grouped by a comparable key, and each statement carries one
//     key. Groups, and chunks of MaxItems within a group, run as parallel
//     statements.
//   - with an ID, an id appears at most once per group and flush (a second
//     item for it waits for the next flush, so its outcome is what two
//     consecutive single calls would get), and a group is sent in
//     ascending id order so concurrent statements lock rows in one order.
//   - if a batch statement fails, each of its items is retried alone, so
//     one caller's bad item or a deadlock never becomes another caller's
//     error. This needs a statement that applies all or nothing (one SQL
//     statement, or one transaction). Retry narrows it for writes that are
//     not idempotent: a statement whose connection was lost may have
//     committed, and sending its items again would write them twice.
//   - with a Size, MaxSize bounds a statement by its items' summed size
//     too (bytes of payload, say), as MaxItems bounds their number.
//
// A Batcher is a lifecycle component: before Start and after Stop it runs
// every call directly, as a batch of one on the caller's context, so the
// code using it works without the component running.
package groupcommit

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxItems is Options.MaxItems when it is not positive.
const DefaultMaxItems = 500

// Exec runs one batch statement for items that all share key. On success
// it returns exactly one result per item, in item order. On error it must
// have applied nothing: the Batcher then retries the items one by one.
type Exec[K comparable, I, R any] func(ctx context.Context, key K, items []I) ([]R, error)

// Options shape a Batcher's flushes. The zero value is a zero window,
// DefaultMaxItems, no identity and no timeout.
type Options[I any] struct {
	// Window is how long the oldest queued item may wait for others to
	// share its statement. Zero or negative: no wait, a flush takes what is
	// queued when it starts.
	Window time.Duration
	// MaxItems flushes at once when this many items are queued, and bounds
	// the items of one statement. Not positive: DefaultMaxItems.
	MaxItems int
	// ID, when set, is the identity of the row an item writes (see the
	// package doc: once per group and flush, ascending order). Without it
	// items are sent in arrival order and duplicates share a statement.
	ID func(item I) int64
	// Timeout, when positive, bounds the work for one sent chunk: its batch
	// statement and, should that fail, the one-by-one retries, which share
	// its deadline. So once an item is sent its caller waits at most
	// Timeout. Direct calls (before Start, after Stop) get it too.
	Timeout time.Duration
	// OnFlush, when set, is told the number of items of every batch the
	// flusher sends (not retries or direct calls): the batch-size metric.
	// It runs on the flusher and must not block.
	OnFlush func(n int)
	// Flushers is how many flushes may run at once (not positive: 1). With
	// more than one, a flush starts as soon as items are due and a flusher
	// is free, so the next batch's statement is on its way while the
	// previous one commits (as several connections of a database client
	// keep its server busy); each flush still takes the whole queue. It is
	// ignored (1) with an ID, whose one-row-once-per-flush promise needs
	// flushes in turn.
	Flushers int
	// Retry, when set, decides whether the items of a failed batch are
	// retried one by one (true) or all get its error (false). Nil: always
	// retried. Writes without an idempotency key should retry only errors
	// that prove nothing was applied (the server refused the statement).
	Retry func(err error) bool
	// Size, with a positive MaxSize, is an item's share of a statement's
	// MaxSize: a statement carries items while their sizes sum to at most
	// MaxSize (an item larger than MaxSize goes alone).
	Size    func(item I) int
	MaxSize int
}

// Batcher is the group commit of one kind of write. Create it with New;
// its methods are safe for concurrent use.
type Batcher[K comparable, I, R any] struct {
	name     string
	exec     Exec[K, I, R]
	window   time.Duration
	maxItems int
	id       func(I) int64
	timeout  time.Duration
	onFlush  func(n int)
	flushers int
	retry    func(error) bool
	size     func(I) int
	maxSize  int
	clock    clock
	// onStatement is the test hook (OnStatement); a pointer so it may be
	// set while calls run.
	onStatement atomic.Pointer[func(n int)]

	mu    sync.Mutex
	state state
	queue []*call[K, I, R] // arrival order; calls that gave up are removed
	kick  chan struct{}    // buffer 1: the queue changed in a way the flusher waits for
	stop  chan struct{}    // closed by Stop: flush everything and exit
	done  chan struct{}    // closed when the flusher has exited
	// cancel ends the flusher's context: Stop gave up waiting, so the
	// statements in flight are cancelled.
	cancel context.CancelFunc
}

// state is where a Batcher is in its life; it only moves forward.
type state int

const (
	idle    state = iota // not started: calls run directly
	running              // the flusher runs: calls are queued
	stopped              // Stop was called: calls run directly, for good
)

type call[K comparable, I, R any] struct {
	key  K
	item I
	at   time.Time
	sent bool // guarded by Batcher.mu; a sent call waits for its statement
	done chan struct{}
	res  R
	err  error
}

// New returns a Batcher named name (its lifecycle name) that writes with
// exec. It starts no goroutine; Start does.
func New[K comparable, I, R any](name string, exec Exec[K, I, R], o Options[I]) *Batcher[K, I, R] {
	if o.MaxItems <= 0 {
		o.MaxItems = DefaultMaxItems
	}
	if o.Flushers <= 0 || o.ID != nil {
		o.Flushers = 1
	}
	if o.MaxSize <= 0 {
		o.Size = nil
	}
	return &Batcher[K, I, R]{
		name: name, exec: exec, window: max(o.Window, 0), maxItems: o.MaxItems, id: o.ID, timeout: o.Timeout, onFlush: o.OnFlush,
		flushers: o.Flushers, retry: o.Retry, size: o.Size, maxSize: o.MaxSize, clock: realClock{}, kick: make(chan struct{}, 1),
	}
}

// OnStatement sets a hook told the size of every statement the Batcher
// runs: batches, one-by-one retries and direct calls (tests count them).
// It may be set at any time; nil removes it. f runs on the goroutine about
// to send the statement and must not block.
func (b *Batcher[K, I, R]) OnStatement(f func(n int)) { b.onStatement.Store(&f) }

// Queued is how many calls wait in the queue, not yet sent (tests wait for
// it; a gauge could sample it).
func (b *Batcher[K, I, R]) Queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// Name implements lifecycle.Component.
func (b *Batcher[K, I, R]) Name() string { return b.name }

// Start implements lifecycle.Component: it launches the flusher and returns.
// It does nothing when already running or once stopped.
func (b *Batcher[K, I, R]) Start(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != idle {
		return nil
	}
	// Statements live until Stop gives up, not until the start context ends.
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b.state, b.cancel, b.stop, b.done = running, cancel, make(chan struct{}), make(chan struct{})
	go func() {
		defer cancel()
		b.run(ctx)
	}()
	return nil
}

// Stop implements lifecycle.Component: calls from now on run directly;
// everything queued is flushed, and Stop waits for that until ctx ends, then
// cancels the statements in flight, waits for them to return and reports
// ctx's error. Safe before Start (which then does nothing) and more than
// once.
func (b *Batcher[K, I, R]) Stop(ctx context.Context) error {
	b.mu.Lock()
	if b.state == running {
		close(b.stop)
	}
	b.state = stopped
	cancel, done := b.cancel, b.done
	b.mu.Unlock()
	if done == nil {
		return nil // never started
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		cancel()
		<-done // statements end promptly once cancelled
		return ctx.Err()
	}
}

// Do writes item under key and returns its result: merged into a batch
// statement with concurrent calls while the Batcher runs, directly
// otherwise. If ctx ends while the item is still queued, the item is
// dropped (never sent) and Do returns ctx.Err(); once sent, Do waits for the
// statement and returns its outcome, however ctx ends.
func (b *Batcher[K, I, R]) Do(ctx context.Context, key K, item I) (R, error) {
	b.mu.Lock()
	if b.state != running {
		b.mu.Unlock()
		return b.single(ctx, key, item)
	}
	c := &call[K, I, R]{key: key, item: item, at: b.clock.Now(), done: make(chan struct{})}
	b.queue = append(b.queue, c)
	// The flusher needs to hear only of the first item (to start the
	// window) and of a full queue (to cut it short).
	wake := len(b.queue) == 1 || len(b.queue) >= b.maxItems
	b.mu.Unlock()
	if wake {
		select {
		case b.kick <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
	}
	b.mu.Lock()
	sent := c.sent
	if !sent {
		if i := slices.Index(b.queue, c); i >= 0 {
			b.queue = slices.Delete(b.queue, i, i+1)
		}
	}
	b.mu.Unlock()
	if !sent {
		var zero R
		return zero, ctx.Err()
	}
	<-c.done // the statement decides
	return c.res, c.err
}

// single runs item as a batch of one, under the Timeout.
func (b *Batcher[K, I, R]) single(ctx context.Context, key K, item I) (R, error) {
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}
	return b.one(ctx, key, item)
}

// one runs item as a batch of one on ctx.
func (b *Batcher[K, I, R]) one(ctx context.Context, key K, item I) (R, error) {
	res, err := b.statement(ctx, key, []I{item})
	if err != nil {
		var zero R
		return zero, err
	}
	return res[0], nil
}
