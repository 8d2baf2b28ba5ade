package lifecycle

import (
	"context"
	"sync"
	"time"
)

// Loop is a Component that runs tick every interval (and once right after
// Start) on its own goroutine until Stop: the shape of every periodic
// maintenance job (lease reaper, retention). Start returns at once; Stop is
// safe before Start and more than once.
type Loop struct {
	name     string
	interval time.Duration
	tick     func(ctx context.Context)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewLoop returns a Loop named name that calls tick every interval; tick
// gets a context cancelled by Stop.
func NewLoop(name string, interval time.Duration, tick func(ctx context.Context)) *Loop {
	return &Loop{name: name, interval: interval, tick: tick}
}

// Name implements Component.
func (l *Loop) Name() string { return l.name }

// Start implements Component.
func (l *Loop) Start(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		return nil
	}
	// The loop lives until Stop, not until the start context ends.
	ctx, l.cancel = context.WithCancel(context.WithoutCancel(ctx))
	l.done = make(chan struct{})
	go func() {
		defer close(l.done)
		t := time.NewTicker(l.interval)
		defer t.Stop()
		for {
			l.tick(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

// Stop implements Component: it cancels the running tick and
// waits for it until ctx ends.
func (l *Loop) Stop(ctx context.Context) error {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
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
