package groupcommit_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/switchboard/switchboard/pkg/groupcommit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// guard bounds every wait of these tests, so a broken Batcher fails the
// test instead of hanging it. Nothing waits for it to pass.
const guard = time.Minute

// recv returns the next value from ch, failing the test after guard.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(guard):
		require.FailNow(t, "nothing received")
		panic("unreachable")
	}
}

// batcher is the Batcher under test: keys and results are strings, an item
// is the id of the row it writes.
type batcher = groupcommit.Batcher[string, int64, string]

// stmt is one call of the fake exec function, held until the test answers.
type stmt struct {
	ctx   context.Context
	key   string
	items []int64
	reply chan reply
}

type reply struct {
	res []string
	err error
}

// ok answers the statement with result(key, item) for every item.
func (s *stmt) ok() {
	res := make([]string, len(s.items))
	for i, it := range s.items {
		res[i] = result(s.key, it)
	}
	s.reply <- reply{res: res}
}

func (s *stmt) fail(err error) { s.reply <- reply{err: err} }

func result(key string, item int64) string { return fmt.Sprintf("%s/%d", key, item) }

// fakeDB is the exec function: each statement is handed to the test on
// stmts and returns when the test answers it or its context ends.
type fakeDB struct {
	stmts chan *stmt
	mu    sync.Mutex
	sizes []int // what the OnStatement hook reported, in order
}

func (db *fakeDB) exec(ctx context.Context, key string, items []int64) ([]string, error) {
	s := &stmt{ctx: ctx, key: key, items: slices.Clone(items), reply: make(chan reply, 1)}
	db.stmts <- s
	select {
	case r := <-s.reply:
		return r.res, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (db *fakeDB) hooked() []int {
	db.mu.Lock()
	defer db.mu.Unlock()
	return slices.Clone(db.sizes)
}

// outcome is what one Do returned.
type outcome struct {
	res string
	err error
}

// do runs b.Do on its own goroutine; its outcome arrives on the channel.
func do(ctx context.Context, b *batcher, key string, item int64) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		res, err := b.Do(ctx, key, item)
		ch <- outcome{res, err}
	}()
	return ch
}

// fakeClock is a clock moved by hand. Each At call is reported on armed
// (when there is room), so a test can see which deadline the flusher waits
// for.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []fakeTimer
	armed  chan time.Time
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), armed: make(chan time.Time, 100)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) At(t time.Time) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if c.now.Before(t) {
		c.timers = append(c.timers, fakeTimer{at: t, ch: ch})
	} else {
		ch <- c.now
	}
	select {
	case c.armed <- t:
	default:
	}
	return ch, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.timers = slices.DeleteFunc(c.timers, func(ft fakeTimer) bool { return ft.ch == ch })
	}
}

// waitArmed waits until the flusher arms a timer for deadline (earlier
// arms, for other deadlines, are skipped).
func (c *fakeClock) waitArmed(t *testing.T, deadline time.Time) {
	t.Helper()
	for !recv(t, c.armed).Equal(deadline) {
	}
}

// Advance moves the clock by d and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.timers = slices.DeleteFunc(c.timers, func(ft fakeTimer) bool {
		if c.now.Before(ft.at) {
			return false
		}
		ft.ch <- c.now
		return true
	})
}

// testBundle is one Batcher over a fake exec function and a fake clock.
type testBundle struct {
	b   *batcher
	db  *fakeDB
	clk *fakeClock
}

// setup returns a Batcher with options o (ID the item itself unless
// noID), measured on a fake clock, not started, stopped at cleanup.
func setup(t *testing.T, o groupcommit.Options[int64], noID bool) *testBundle {
	t.Helper()
	if !noID {
		o.ID = func(item int64) int64 { return item }
	}
	tb := &testBundle{db: &fakeDB{stmts: make(chan *stmt, 100)}, clk: newFakeClock()}
	tb.b = groupcommit.New("test", tb.db.exec, o)
	groupcommit.SetClock(tb.b, tb.clk)
	tb.b.OnStatement(func(n int) {
		tb.db.mu.Lock()
		defer tb.db.mu.Unlock()
		tb.db.sizes = append(tb.db.sizes, n)
	})
	t.Cleanup(func() {
		// t.Context() is already cancelled in Cleanup. A test that failed
		// may leave statements unanswered: Stop cancels them.
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		_ = tb.b.Stop(ctx)
	})
	return tb
}

// start starts the Batcher.
func (tb *testBundle) start(t *testing.T) {
	t.Helper()
	require.NoError(t, tb.b.Start(t.Context()))
}

// queued waits until n calls are queued.
func (tb *testBundle) queued(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return groupcommit.Queued(tb.b) == n }, guard, time.Millisecond)
}

// hold sends one call for key "hold" and waits until its statement is in
// flight, so the flusher is busy and what comes next queues for the next
// flush. Answer the statement to let the flusher go on.
func (tb *testBundle) hold(t *testing.T) (*stmt, <-chan outcome) {
	t.Helper()
	out := do(t.Context(), tb.b, "hold", 0)
	s := recv(t, tb.db.stmts)
	require.Equal(t, "hold", s.key)
	return s, out
}

// noStatement asserts that no statement is waiting to be answered.
func (tb *testBundle) noStatement(t *testing.T) {
	t.Helper()
	require.Empty(t, tb.db.stmts, "no statement was sent")
}
