package queue

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// merger turns concurrent single-item writes (Complete, Heartbeat) into one
// fenced batch statement (TodoCompleteBatch, TodoHeartbeatBatch) per short
// window: group commit for the hot path. Each caller still gets its own
// item's outcome, and returns only after the statement that carried its item
// committed (every batch statement is its own transaction).
//
// How a flush is shaped:
//   - the window starts when the oldest queued item arrived; the flush runs
//     when it has passed, or at once when maxItems are queued. Window 0 adds
//     no latency: a flush takes whatever is queued right now.
//   - one flush at a time: items arriving while a flush's statements run
//     queue up for the next one, so batches grow with load by themselves.
//   - items are grouped by caller (tenant + agent): the batch SQL scopes the
//     whole statement to one human_id and caller_agent_id. Groups, and
//     chunks of maxItems within a group, run as parallel statements.
//   - a todo id appears at most once per flush: a second item for the same
//     todo waits for the next flush, so its outcome is exactly what two
//     consecutive single-item calls would get.
//   - items are sent in id order, so concurrent batch statements lock rows
//     in the same order.
//   - if a batch statement fails (nothing was applied: it is one statement),
//     each of its items is retried alone, so one caller's bad item or a
//     deadlock never becomes another caller's error.
//
// A caller whose context ends while its item is still queued is dropped
// from the queue and gets its context's error; once the item is sent, the
// caller waits for the statement and reports its outcome.
//
// Before Start and after Stop the merger runs each call directly (a batch of
// one on the caller's context), so the RPCs work without the component.
type merger[I, R any] struct {
	name     string
	window   time.Duration
	maxItems int
	// exec runs one batch for one caller; results are in item order.
	exec func(ctx context.Context, c store.Caller, items []I) ([]R, error)
	// id is the todo an item writes.
	id func(I) int64
	// onStatement, when set, is called once per batch statement with its
	// size (a test hook).
	onStatement func(n int)

	mu      sync.Mutex
	running bool
	queue   []*mergeCall[I, R] // arrival order; dropped calls are removed
	firstAt time.Time          // arrival of queue[0]
	kick    chan struct{}      // buffer 1: the queue changed
	cancel  context.CancelFunc // hard stop of statements in flight
	stop    chan struct{}      // closed by Stop: flush everything and exit
	done    chan struct{}      // closed when the flusher has exited
}

type mergeCall[I, R any] struct {
	caller store.Caller
	item   I
	at     time.Time
	sent   bool // guarded by merger.mu
	done   chan struct{}
	res    R
	err    error
}

func newMerger[I, R any](name string, window time.Duration, maxItems int,
	exec func(context.Context, store.Caller, []I) ([]R, error), id func(I) int64,
) *merger[I, R] {
	return &merger[I, R]{name: name, window: window, maxItems: maxItems, exec: exec, id: id, kick: make(chan struct{}, 1)}
}

// Name implements lifecycle.Component.
func (m *merger[I, R]) Name() string { return m.name }

// Start implements lifecycle.Component: it launches the flusher and returns.
func (m *merger[I, R]) Start(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running || m.done != nil {
		return nil // running, or stopped for good
	}
	// Statements live until Stop gives up, not until the start context ends.
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.cancel = cancel
	m.stop, m.done, m.running = make(chan struct{}), make(chan struct{}), true
	go func() {
		defer cancel()
		m.run(ctx)
	}()
	return nil
}

// Stop implements lifecycle.Component: calls from now on run directly; what
// is queued is flushed, and Stop waits for it until ctx ends (then the
// statements in flight are cancelled). Safe before Start and more than once.
func (m *merger[I, R]) Stop(ctx context.Context) error {
	m.mu.Lock()
	if m.running {
		m.running = false
		close(m.stop)
	}
	cancel, done := m.cancel, m.done
	m.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		cancel()
		return nil
	case <-ctx.Done():
		cancel()
		<-done // the statements end promptly once cancelled
		return ctx.Err()
	}
}

// do runs one item for c, merged with concurrent calls when running.
func (m *merger[I, R]) do(ctx context.Context, c store.Caller, item I) (R, error) {
	m.mu.Lock()
	if !m.running {
		m.mu.Unlock()
		return m.single(ctx, c, item)
	}
	call := &mergeCall[I, R]{caller: c, item: item, at: time.Now(), done: make(chan struct{})}
	if len(m.queue) == 0 {
		m.firstAt = call.at
	}
	m.queue = append(m.queue, call)
	// The flusher needs to hear only of the first item (to start the
	// window) and of a full queue (to cut it short).
	wake := len(m.queue) == 1 || len(m.queue) >= m.maxItems
	m.mu.Unlock()
	if wake {
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
	select {
	case <-call.done:
		return call.res, call.err
	case <-ctx.Done():
	}
	m.mu.Lock()
	if !call.sent {
		if i := slices.Index(m.queue, call); i >= 0 {
			m.queue = slices.Delete(m.queue, i, i+1)
			if i == 0 && len(m.queue) > 0 {
				m.firstAt = m.queue[0].at
			}
		}
		m.mu.Unlock()
		var zero R
		return zero, ctx.Err()
	}
	m.mu.Unlock()
	// Sent: the statement decides; report its outcome.
	<-call.done
	return call.res, call.err
}

func (m *merger[I, R]) single(ctx context.Context, c store.Caller, item I) (R, error) {
	if m.onStatement != nil {
		m.onStatement(1)
	}
	res, err := m.exec(ctx, c, []I{item})
	if err != nil {
		var zero R
		return zero, err
	}
	return res[0], nil
}

// run is the flusher: one flush at a time until Stop, then a last flush of
// everything queued.
func (m *merger[I, R]) run(ctx context.Context) {
	defer close(m.done)
	for {
		m.mu.Lock()
		n, first := len(m.queue), m.firstAt
		m.mu.Unlock()
		if n == 0 {
			select {
			case <-m.kick:
				continue
			case <-m.stop:
				m.drain(ctx)
				return
			}
		}
		if wait := m.window - time.Since(first); wait > 0 && n < m.maxItems {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-m.kick:
				t.Stop()
				continue // re-check the size
			case <-m.stop:
				t.Stop()
			}
		}
		m.flush(ctx)
	}
}

// drain flushes until nothing is queued (a flush may defer duplicates).
func (m *merger[I, R]) drain(ctx context.Context) {
	for {
		m.mu.Lock()
		n := len(m.queue)
		m.mu.Unlock()
		if n == 0 {
			return
		}
		m.flush(ctx)
	}
}

// mergeKey groups calls one batch statement may carry.
type mergeKey struct {
	human    uuid.UUID
	agent    uuid.UUID
	hasAgent bool
}

func keyOf(c store.Caller) mergeKey {
	k := mergeKey{human: c.HumanID}
	if c.AgentID != nil {
		k.agent, k.hasAgent = *c.AgentID, true
	}
	return k
}

// flush takes the queue (all of it, but each todo id once per caller
// group), sends it as one statement per group and chunk, and waits for them.
func (m *merger[I, R]) flush(ctx context.Context) {
	m.mu.Lock()
	groups := map[mergeKey][]*mergeCall[I, R]{}
	seen := map[mergeKey]map[int64]bool{}
	var rest []*mergeCall[I, R]
	for _, c := range m.queue {
		k := keyOf(c.caller)
		if seen[k] == nil {
			seen[k] = map[int64]bool{}
		}
		if id := m.id(c.item); seen[k][id] {
			rest = append(rest, c) // same todo again: next flush
		} else {
			seen[k][id] = true
			c.sent = true
			groups[k] = append(groups[k], c)
		}
	}
	m.queue = rest
	if len(rest) > 0 {
		m.firstAt = rest[0].at
	}
	m.mu.Unlock()

	var wg sync.WaitGroup
	for _, calls := range groups {
		slices.SortFunc(calls, func(a, b *mergeCall[I, R]) int { return compareID(m.id(a.item), m.id(b.item)) })
		for chunk := range slices.Chunk(calls, m.maxItems) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m.send(ctx, chunk)
			}()
		}
	}
	wg.Wait()
}

func compareID(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// send runs one batch statement for calls (all of one caller group) and
// hands each call its result.
func (m *merger[I, R]) send(ctx context.Context, calls []*mergeCall[I, R]) {
	items := make([]I, len(calls))
	for i, c := range calls {
		items[i] = c.item
	}
	if m.onStatement != nil {
		m.onStatement(len(items))
	}
	res, err := m.exec(ctx, calls[0].caller, items)
	if err != nil && len(calls) > 1 && ctx.Err() == nil {
		// The statement applied nothing; let each item meet its own fate.
		for _, c := range calls {
			c.res, c.err = m.single(ctx, c.caller, c.item)
			close(c.done)
		}
		return
	}
	for i, c := range calls {
		if err != nil {
			c.err = err
		} else {
			c.res = res[i]
		}
		close(c.done)
	}
}
