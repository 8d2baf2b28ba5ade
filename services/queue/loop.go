package queue

import (
	"context"
	"sync"
	"time"
)

// loop is a lifecycle.Component that runs tick every interval (and once
// right after Start) on its own goroutine until Stop. Start returns at
// once; Stop is safe before Start and more than once.
type loop struct {
	name     string
	interval time.Duration
	tick     func(ctx context.Context)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

func newLoop(name string, interval time.Duration, tick func(context.Context)) *loop {
	return &loop{name: name, interval: interval, tick: tick}
}

// Name implements lifecycle.Component.
func (l *loop) Name() string { return l.name }

// Start implements lifecycle.Component.
func (l *loop) Start(ctx context.Context) error {
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

// Stop implements lifecycle.Component: it cancels the running tick and
// waits for it until ctx ends.
func (l *loop) Stop(ctx context.Context) error {
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
