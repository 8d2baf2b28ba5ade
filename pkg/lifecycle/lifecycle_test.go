package lifecycle_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/lifecycle"
)

type recorder struct{ events []string }

func (r *recorder) component(name string, startErr error) lifecycle.Func {
	return lifecycle.Func{
		ComponentName: name,
		OnStart: func(context.Context) error {
			r.events = append(r.events, "start "+name)
			return startErr
		},
		OnStop: func(context.Context) error {
			r.events = append(r.events, "stop "+name)
			return nil
		},
	}
}

const grace = time.Second

func TestGroupStopsInReverseOrder(t *testing.T) {
	t.Parallel()
	var r recorder
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // already shutting down: start everything, then stop
	g := lifecycle.NewGroup(zap.NewNop(), r.component("a", nil), r.component("b", nil), r.component("c", nil))
	require.NoError(t, g.Run(ctx, grace))
	require.Equal(t, []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}, r.events)
}

func TestGroupStopsOnlyStartedComponentsWhenStartFails(t *testing.T) {
	t.Parallel()
	var r recorder
	boom := errors.New("boom")
	g := lifecycle.NewGroup(zap.NewNop(), r.component("a", nil), r.component("b", boom), r.component("c", nil))
	err := g.Run(t.Context(), grace)
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "start b")
	require.Equal(t, []string{"start a", "start b", "stop a"}, r.events)
}

type failing struct {
	lifecycle.Func
	ch chan error
}

func (f failing) Failed() <-chan error { return f.ch }

func TestGroupEndsWhenAComponentFails(t *testing.T) {
	t.Parallel()
	var r recorder
	f := failing{Func: r.component("f", nil), ch: make(chan error, 1)}
	dead := errors.New("listener died")
	f.ch <- dead
	g := lifecycle.NewGroup(zap.NewNop(), r.component("a", nil), f)
	err := g.Run(t.Context(), grace)
	require.ErrorIs(t, err, dead)
	require.Equal(t, []string{"start a", "start f", "stop f", "stop a"}, r.events)
}

func TestLoopTicksAtStartAndStopsOnStop(t *testing.T) {
	t.Parallel()
	ticks := make(chan struct{}, 100)
	stopped := make(chan struct{})
	l := lifecycle.NewLoop("l", time.Hour, func(ctx context.Context) {
		ticks <- struct{}{}
		<-ctx.Done() // a long tick: Stop must cancel it
		close(stopped)
	})
	require.NoError(t, l.Stop(t.Context()), "Stop before Start is a no-op")
	require.Equal(t, "l", l.Name())
	require.NoError(t, l.Start(t.Context()))
	require.NoError(t, l.Start(t.Context()), "a second Start is a no-op")
	select {
	case <-ticks:
	case <-time.After(time.Minute): // a safety net: the tick comes at once
		t.Fatal("no tick right after Start")
	}
	require.NoError(t, l.Stop(t.Context()))
	select {
	case <-stopped:
	default:
		t.Fatal("Stop returned before the tick ended")
	}
	require.NoError(t, l.Stop(t.Context()), "Stop twice")
}

// Wake runs a tick now instead of at the next interval; wakes that come
// while a tick runs fold into one more tick, and Wake never blocks.
func TestLoopWakeTicksNowAndFolds(t *testing.T) {
	t.Parallel()
	ticks := make(chan struct{}, 100)
	release := make(chan struct{})
	l := lifecycle.NewLoop("l", time.Hour, func(context.Context) {
		ticks <- struct{}{}
		<-release
	})
	l.Wake() // before Start: the first tick after the one at Start
	require.NoError(t, l.Start(t.Context()))
	t.Cleanup(func() { close(release); require.NoError(t, l.Stop(context.Background())) })
	tick := func(what string) {
		t.Helper()
		select {
		case <-ticks:
		case <-time.After(time.Minute): // a safety net: the interval is an hour
			t.Fatal(what)
		}
	}
	tick("no tick at Start")
	for range 5 {
		l.Wake() // while the first tick runs: one more tick, not five
	}
	release <- struct{}{}
	tick("no tick after the wakes")
	release <- struct{}{}
	require.Never(t, func() bool { return len(ticks) > 0 }, 100*time.Millisecond, 10*time.Millisecond,
		"the wakes folded into one tick")
}
