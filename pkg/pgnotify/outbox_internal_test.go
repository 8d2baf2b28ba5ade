package pgnotify

import (
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// The outbox logic without a database: a Notifier that is never started,
// over a fake clock.
func TestOutbox(t *testing.T) {
	t.Parallel()
	type bundle struct {
		clock *fakeClock
		n     *Notifier
	}
	setup := func(t *testing.T) *bundle {
		t.Helper()
		clock := &fakeClock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
		n := New(zap.NewNop(), nil, Options{})
		n.out.now = clock.now
		return &bundle{clock: clock, n: n}
	}
	// collect returns what is due now as "channel payload" strings, and next.
	collect := func(b *bundle) ([]string, time.Time) {
		var bt batch
		next := b.n.out.collect(b.clock.now(), &bt)
		out := make([]string, len(bt.channels))
		for i := range bt.channels {
			out[i] = bt.channels[i] + " " + bt.payloads[i]
		}
		return out, next
	}

	t.Run("MarksOfOneKeyInAWindowAreOneNotificationWithTheLatestPayload", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		c := b.n.Coalescer("q", 5*time.Millisecond)
		start := b.clock.now()
		for _, p := range []string{"1", "2", "3"} {
			c.Mark("k", p)
			b.clock.advance(time.Millisecond)
		}
		got, next := collect(b)
		require.Empty(t, got, "3 ms into a 5 ms window nothing is due")
		require.Equal(t, start.Add(5*time.Millisecond), next, "the window counts from the first mark")
		b.clock.advance(2 * time.Millisecond)
		got, next = collect(b)
		require.Equal(t, []string{"q 3"}, got)
		require.True(t, next.IsZero(), "nothing is pending any more")
		got, _ = collect(b)
		require.Empty(t, got, "sent once")
	})

	t.Run("TwoKeysAreTwoNotifications", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		c := b.n.Coalescer("q", 5*time.Millisecond)
		c.Mark("a", "pa")
		c.Mark("b", "pb")
		c.Mark("a", "pa2")
		b.clock.advance(5 * time.Millisecond)
		got, _ := collect(b)
		slices.Sort(got)
		require.Equal(t, []string{"q pa2", "q pb"}, got)
	})

	t.Run("EachChannelKeepsItsOwnWindow", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		fast := b.n.Coalescer("fast", time.Millisecond)
		slow := b.n.Coalescer("slow", 5*time.Millisecond)
		start := b.clock.now()
		slow.Mark("k", "s")
		fast.Mark("k", "f")
		b.clock.advance(time.Millisecond)
		got, next := collect(b)
		require.Equal(t, []string{"fast f"}, got, "the fast channel does not wait for the slow one")
		require.Equal(t, start.Add(5*time.Millisecond), next)
		fast.Mark("k", "f2") // a new window for fast, from now
		b.clock.advance(time.Millisecond)
		got, next = collect(b)
		require.Equal(t, []string{"fast f2"}, got)
		require.Equal(t, start.Add(5*time.Millisecond), next, "and the slow one is not sent early")
		b.clock.advance(3 * time.Millisecond)
		got, _ = collect(b)
		require.Equal(t, []string{"slow s"}, got)
	})

	t.Run("AMarkAfterASendStartsANewWindow", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		c := b.n.Coalescer("q", 5*time.Millisecond)
		c.Mark("k", "1")
		b.clock.advance(5 * time.Millisecond)
		got, _ := collect(b)
		require.Len(t, got, 1)
		b.clock.advance(time.Hour)
		c.Mark("k", "2")
		got, next := collect(b)
		require.Empty(t, got, "a long quiet spell does not make the next mark due at once")
		require.Equal(t, b.clock.now().Add(5*time.Millisecond), next)
	})

	t.Run("QueuedPayloadsAreDueAtOnceInOrder", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		q := b.n.Queue("e", 3)
		for _, p := range []string{"1", "2", "1", "4"} {
			q.Send(p)
		}
		require.Equal(t, int64(1), q.Dropped(), "the fourth did not fit")
		require.False(t, q.Send(string(make([]byte, MaxPayload+1))), "too long for NOTIFY")
		require.Equal(t, int64(2), q.Dropped())
		got, next := collect(b)
		require.Equal(t, []string{"e 1", "e 2", "e 1"}, got, "FIFO, and each payload its own notification")
		require.True(t, next.IsZero())
		require.True(t, q.Send("5"), "room again")
	})

	t.Run("OneFlushTakesEverythingDue", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		c := b.n.Coalescer("q", time.Millisecond)
		q := b.n.Queue("e", 10)
		c.Mark("k", "c")
		q.Send("e1")
		b.clock.advance(time.Millisecond)
		var bt batch
		b.n.out.collect(b.clock.now(), &bt)
		require.Equal(t, []string{"q", "e"}, bt.channels)
		require.Equal(t, []*Queue{nil, q}, bt.from, "a failed statement is counted against the queued ones only")
	})

	t.Run("MarksWakeTheFlusherOncePerWindow", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		c := b.n.Coalescer("q", time.Millisecond)
		c.Mark("a", "1")
		require.Len(t, b.n.out.kick, 1)
		<-b.n.out.kick
		c.Mark("b", "2")
		require.Empty(t, b.n.out.kick, "the flusher already knows when this window is due")
	})
}

func TestRegistrationRules(t *testing.T) {
	t.Parallel()
	n := New(zap.NewNop(), nil, Options{})
	require.Error(t, n.Subscribe("", Subscriber{OnNotify: func(string) {}}))
	require.Error(t, n.Subscribe(string(make([]byte, maxChannel+1)), Subscriber{OnNotify: func(string) {}}))
	require.Error(t, n.Subscribe("c", Subscriber{}), "OnNotify is required")
	require.NoError(t, n.Subscribe("c", Subscriber{OnNotify: func(string) {}}))
	require.NoError(t, n.Subscribe("c", Subscriber{OnNotify: func(string) {}}), "a channel may have several subscribers")
	require.Len(t, slices.Collect(maps.Keys(n.subs)), 1)
	require.Panics(t, func() { n.Coalescer("", time.Millisecond) })
	require.Panics(t, func() { n.Coalescer("c", 0) })
	require.Panics(t, func() { n.Queue("c", 0) })
}
