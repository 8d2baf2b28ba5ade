package ingest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestStatusWriter(gap time.Duration) (*statusWriter, *fakeClock, *[]string) {
	var writes []string
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	w := newStatusWriter(func(reason string) { writes = append(writes, reason) }, gap)
	w.now = clock.now
	return w, clock, &writes
}

// TestStatusWriterRateLimits: a tight failure loop (or flapping) writes the
// row at most once per gap; an unchanged state only once per refresh.
func TestStatusWriterRateLimits(t *testing.T) {
	t.Parallel()
	w, clock, writes := newTestStatusWriter(2 * time.Second)

	// 10,000 failures in 10 s, alternating with successes: 6 writes at most.
	for i := range 10_000 {
		if i%2 == 0 {
			w.report("dial 127.0.0.1:6379: connection refused")
		} else {
			w.report("")
		}
		clock.advance(time.Millisecond)
	}
	require.LessOrEqual(t, len(*writes), 6)
	require.Equal(t, "dial 127.0.0.1:6379: connection refused", (*writes)[0], "the first outcome is written at once")

	// Steady failure: once per refresh.
	*writes = nil
	for range 600 { // 10 minutes, a report per second
		w.report("NOAUTH")
		clock.advance(time.Second)
	}
	require.Len(t, *writes, 10)
}

// TestStatusWriterWritesChanges: a change is written once the gap has
// passed, so a failure, and then the recovery, both reach the row.
func TestStatusWriterWritesChanges(t *testing.T) {
	t.Parallel()
	w, clock, writes := newTestStatusWriter(2 * time.Second)
	w.report("")
	w.report("NOGROUP")
	require.Equal(t, []string{""}, *writes, "within the gap: held back")
	clock.advance(2 * time.Second)
	w.report("NOGROUP")
	require.Equal(t, []string{"", "NOGROUP"}, *writes)
	clock.advance(3 * time.Second)
	w.report("")
	require.Equal(t, []string{"", "NOGROUP", ""}, *writes, "cleared after recovery")
}
