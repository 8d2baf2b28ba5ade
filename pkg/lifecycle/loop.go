package lifecycle

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Goroutines is a Component that runs each of its functions on its own
// goroutine from Start until Stop: the shape of a background worker with a
// few loops (a listen connection, a flusher, a reader). Each function gets a
// context that Stop cancels and must return soon after. Start returns at
// once; Stop is safe before Start and more than once.
type Goroutines struct {
	name string
	fns  []func(ctx context.Context)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewGoroutines returns a Goroutines component named name running fns.
func NewGoroutines(name string, fns ...func(ctx context.Context)) *Goroutines {
	return &Goroutines{name: name, fns: fns}
}

// Name implements Component.
func (g *Goroutines) Name() string { return g.name }

// Start implements Component.
func (g *Goroutines) Start(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cancel != nil {
		return nil
	}
	// The goroutines live until Stop, not until the start context ends.
	ctx, g.cancel = context.WithCancel(context.WithoutCancel(ctx))
	g.done = make(chan struct{})
	var wg sync.WaitGroup
	for _, f := range g.fns {
		wg.Go(func() { f(ctx) })
	}
	go func() { wg.Wait(); close(g.done) }()
	return nil
}

// Stop implements Component: it cancels the functions and waits for them
// until ctx ends.
func (g *Goroutines) Stop(ctx context.Context) error {
	g.mu.Lock()
	cancel, done := g.cancel, g.done
	g.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Loop is a Component that runs tick every interval (and once right after
// Start) on its own goroutine until Stop: the shape of every periodic
// maintenance job (lease reaper, retention). Start returns at once; Stop is
// safe before Start and more than once. Wake runs the next tick now.
type Loop struct {
	*Goroutines
	wake chan struct{}
}

// NewLoop returns a Loop named name that calls tick every interval; tick
// gets a context cancelled by Stop.
func NewLoop(name string, interval time.Duration, tick func(ctx context.Context)) *Loop {
	wake := make(chan struct{}, 1)
	return &Loop{NewGoroutines(name, func(ctx context.Context) {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			tick(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-wake:
			}
		}
	}), wake}
}

// Wake makes the loop tick as soon as the current tick (if any) is done,
// instead of at the next interval: for a change announced by a notification.
// Wakes while a tick runs fold into one more tick; Wake never blocks.
func (l *Loop) Wake() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Warned adapts a pass that can fail (a reaper's or pruner's "once") to a
// Loop's tick: a failure is logged at WARN with msg, except while the loop
// is stopping. The pass's own result is for its callers (tests, logs).
func Warned[N any](log *zap.Logger, msg string, pass func(context.Context) (N, error)) func(context.Context) {
	return func(ctx context.Context) {
		if _, err := pass(ctx); err != nil && ctx.Err() == nil {
			log.Warn(msg, zap.Error(err))
		}
	}
}

// Sleep waits d or until ctx is done; it reports whether d elapsed (false:
// the loop is stopping).
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
