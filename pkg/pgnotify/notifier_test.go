//go:build integration

package pgnotify_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/switchboard/switchboard/pkg/pgnotify"
	"github.com/switchboard/switchboard/pkg/pgtest"
)

// waitFor bounds every wait on a condition: long, so a loaded machine does
// not fail these tests; the conditions usually hold within milliseconds.
const waitFor = 20 * time.Second

// inbox collects one subscriber's payloads and connects.
type inbox struct {
	payloads chan string
	connects chan struct{}
}

func newInbox() *inbox {
	return &inbox{payloads: make(chan string, 1000), connects: make(chan struct{}, 100)}
}

func (in *inbox) subscriber() pgnotify.Subscriber {
	return pgnotify.Subscriber{
		OnNotify:  func(p string) { in.payloads <- p },
		OnConnect: func() { in.connects <- struct{}{} },
	}
}

// next is the next payload, failing after waitFor.
func (in *inbox) next(t *testing.T) string {
	t.Helper()
	select {
	case p := <-in.payloads:
		return p
	case <-time.After(waitFor):
		t.Fatalf("no notification within %s", waitFor)
		return ""
	}
}

// connected waits for the next OnConnect.
func (in *inbox) connected(t *testing.T) {
	t.Helper()
	select {
	case <-in.connects:
	case <-time.After(waitFor):
		t.Fatalf("not connected within %s", waitFor)
	}
}

// start starts n and stops it at cleanup.
func start(t *testing.T, n *pgnotify.Notifier) {
	t.Helper()
	require.NoError(t, n.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, n.Stop(context.Background())) })
}

// testBundle is two Notifiers on one database: a sends, b listens.
type testBundle struct {
	pool *pgxpool.Pool
	a, b *pgnotify.Notifier
	logs *observer.ObservedLogs // b's
}

func setup(t *testing.T, opts pgnotify.Options) *testBundle {
	t.Helper()
	pool := pgtest.NewPool(t)
	core, logs := observer.New(zapcore.WarnLevel)
	a := pgnotify.New(zap.New(core), pool, pgnotify.Options{Name: "a", MaxPerStatement: opts.MaxPerStatement})
	opts.Name = "b"
	return &testBundle{pool: pool, a: a, b: pgnotify.New(zap.New(core), pool, opts), logs: logs}
}

func TestDeliveryBetweenNotifiers(t *testing.T) {
	t.Parallel()
	tb := setup(t, pgnotify.Options{})
	in := newInbox()
	require.NoError(t, tb.b.Subscribe("switchboard_test", in.subscriber()))
	q := tb.a.Queue("switchboard_test", 10)
	c := tb.a.Coalescer("switchboard_test", time.Millisecond)
	start(t, tb.a)
	start(t, tb.b)
	in.connected(t) // sent earlier, it would be lost: nobody was listening yet
	require.True(t, q.Send("queued"))
	require.Equal(t, "queued", in.next(t))
	c.Mark("k", "coalesced")
	require.Equal(t, "coalesced", in.next(t))
	require.Error(t, tb.b.Subscribe("late", in.subscriber()), "subscriptions are made before Start")
}

func TestFanOutByChannel(t *testing.T) {
	t.Parallel()
	tb := setup(t, pgnotify.Options{})
	one, two, alsoOne := newInbox(), newInbox(), newInbox()
	require.NoError(t, tb.b.Subscribe("one", one.subscriber()))
	require.NoError(t, tb.b.Subscribe("two", two.subscriber()))
	require.NoError(t, tb.b.Subscribe("one", alsoOne.subscriber()))
	q1, q2 := tb.a.Queue("one", 10), tb.a.Queue("two", 10)
	start(t, tb.a)
	start(t, tb.b)
	for _, in := range []*inbox{one, two, alsoOne} {
		in.connected(t) // one connection, every subscriber told
	}
	q1.Send("for one")
	q2.Send("for two")
	require.Equal(t, "for one", one.next(t))
	require.Equal(t, "for one", alsoOne.next(t))
	require.Equal(t, "for two", two.next(t))
	// A marker after them on both channels: had a subscriber got the other
	// channel's notification, it would come before the marker.
	q1.Send("end")
	q2.Send("end")
	for _, in := range []*inbox{one, two, alsoOne} {
		require.Equal(t, "end", in.next(t))
	}
}

func TestReconnectsAfterTheBackendIsKilled(t *testing.T) {
	t.Parallel()
	tb := setup(t, pgnotify.Options{ReconnectMin: 10 * time.Millisecond, ReconnectMax: 50 * time.Millisecond})
	in := newInbox()
	require.NoError(t, tb.b.Subscribe("switchboard_test", in.subscriber()))
	q := tb.a.Queue("switchboard_test", 10)
	start(t, tb.a)
	start(t, tb.b)
	in.connected(t)
	pid := pgnotify.ListenerPID(tb.b)
	require.NotZero(t, pid)
	var killed bool
	require.NoError(t, tb.pool.QueryRow(t.Context(), `SELECT pg_terminate_backend($1)`, int32(pid)).Scan(&killed))
	require.True(t, killed)

	in.connected(t) // OnConnect again, on a new connection with its LISTENs in place
	require.NotEqual(t, pid, pgnotify.ListenerPID(tb.b))
	lost := tb.logs.FilterMessage("listen connection lost; reconnecting").All()
	require.Len(t, lost, 1)
	require.Equal(t, zapcore.WarnLevel, lost[0].Level)
	require.Contains(t, lost[0].ContextMap()["error"], "terminating connection")
	q.Send("after")
	require.Equal(t, "after", in.next(t))
}

func TestCoalescing(t *testing.T) {
	t.Parallel()
	tb := setup(t, pgnotify.Options{})
	in := newInbox()
	require.NoError(t, tb.b.Subscribe("fast", in.subscriber()))
	require.NoError(t, tb.b.Subscribe("slow", in.subscriber()))
	// a's clock only moves when the test says so: no mark can fall outside
	// its window however slow the machine.
	clock := &clock{t: time.Now()}
	pgnotify.SetClock(tb.a, clock.now)
	fast, slow := tb.a.Coalescer("fast", time.Millisecond), tb.a.Coalescer("slow", time.Minute)
	marker := tb.a.Queue("fast", 10)
	start(t, tb.a)
	start(t, tb.b)
	in.connected(t)
	in.connected(t)

	for i := range 100 {
		fast.Mark("k1", fmt.Sprintf("k1 #%d", i))
	}
	fast.Mark("k2", "k2")
	slow.Mark("k", "slow")
	clock.advance(time.Millisecond)
	pgnotify.Kick(tb.a)
	got := []string{in.next(t), in.next(t)}
	require.ElementsMatch(t, []string{"k1 #99", "k2"}, got, "one notification per key, the latest payload")
	marker.Send("marker")
	require.Equal(t, "marker", in.next(t), "nothing else was sent: the slow channel waits for its own window")

	clock.advance(time.Minute)
	pgnotify.Kick(tb.a)
	require.Equal(t, "slow", in.next(t))
}

func TestQueueKeepsOrderAndDropsWhenFull(t *testing.T) {
	t.Parallel()
	tb := setup(t, pgnotify.Options{MaxPerStatement: 7}) // several statements
	in := newInbox()
	require.NoError(t, tb.b.Subscribe("fifo", in.subscriber()))
	q := tb.a.Queue("fifo", 20)
	start(t, tb.b)
	in.connected(t)
	// a is not started: nothing drains the queue yet.
	for i := range 20 {
		require.True(t, q.Send(payload(i)))
	}
	require.False(t, q.Send("overflow"), "full: dropped at once, not waited for")
	require.Equal(t, int64(1), q.Dropped())
	start(t, tb.a)
	for i := range 20 {
		require.Equal(t, payload(i), in.next(t))
	}
	// And while it runs, across flushes (a round at a time: each fits).
	for round := 1; round < 4; round++ {
		for i := range 20 {
			require.True(t, q.Send(payload(20*round+i)))
		}
		for i := range 20 {
			require.Equal(t, payload(20*round+i), in.next(t))
		}
	}
}

func TestAFailedSendIsLoggedAndCounted(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	pool.Close() // every statement fails
	core, logs := observer.New(zapcore.WarnLevel)
	n := pgnotify.New(zap.New(core), pool, pgnotify.Options{})
	q := n.Queue("switchboard_test", 10)
	start(t, n)
	q.Send("lost")
	require.Eventually(t, func() bool { return q.Dropped() == 1 }, waitFor, time.Millisecond)
	require.Eventually(t, func() bool {
		return logs.FilterMessageSnippet("notify failed").Len() == 1
	}, waitFor, time.Millisecond, "logged at WARN")
}

func TestStopBeforeStartAndTwice(t *testing.T) {
	t.Parallel()
	n := pgnotify.New(zap.NewNop(), nil, pgnotify.Options{})
	require.Equal(t, "pgnotify", n.Name())
	require.NoError(t, n.Stop(t.Context()), "before Start")
	require.NoError(t, n.Stop(t.Context()), "twice before Start")

	n = pgnotify.New(zap.NewNop(), nil, pgnotify.Options{Name: "node-notifier"})
	require.Equal(t, "node-notifier", n.Name())
	require.NoError(t, n.Start(t.Context()))
	require.ErrorIs(t, n.Subscribe("c", pgnotify.Subscriber{OnNotify: func(string) {}}), pgnotify.ErrStarted)
	require.NoError(t, n.Stop(t.Context()))
	require.NoError(t, n.Stop(t.Context()), "twice")
}

func payload(i int) string { return fmt.Sprintf("p%03d", i) }

// clock is a clock the test moves by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
