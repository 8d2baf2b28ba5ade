// Package lifecycle is the one start/stop contract every long-running piece of
// a node follows (servers, pollers, heartbeats), and the Group that starts them
// in order and stops them in reverse.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/logging"
)

// Component is a long-running part of a node.
//
// Start must return once the component is running (it must not block for the
// component's lifetime). Stop must be safe before Start and more than once; it
// drains gracefully until ctx is done and then forces.
type Component interface {
	Name() string
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Failer is implemented by components that can fail after Start (a listener
// dying, a node evicted from the registry). A value on the channel ends the
// Group's Run with that error.
type Failer interface {
	Failed() <-chan error
}

// Group runs components as one unit.
type Group struct {
	log        *zap.Logger
	components []Component
}

// NewGroup returns a group that starts components in the given order.
func NewGroup(log *zap.Logger, components ...Component) *Group {
	return &Group{log: log, components: components}
}

// Run starts every component in order, waits until ctx is done or one of them
// fails, then stops them in reverse order, all within grace (the shutdown
// budget; it is not cut short by ctx, which is already done by then). The
// returned error is the failure that ended the run (nil for a clean shutdown)
// joined with any stop errors.
func (g *Group) Run(ctx context.Context, grace time.Duration) error {
	started := 0
	var runErr error
	for _, c := range g.components {
		if err := c.Start(ctx); err != nil {
			runErr = fmt.Errorf("start %s: %w", c.Name(), err)
			break
		}
		started++
		g.log.Debug("started", logging.Component(c.Name()))
	}
	if runErr == nil {
		runErr = g.wait(ctx)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	errs := []error{runErr}
	for i := started - 1; i >= 0; i-- {
		c := g.components[i]
		if err := c.Stop(sctx); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", c.Name(), err))
		}
		g.log.Debug("stopped", logging.Component(c.Name()))
	}
	return errors.Join(errs...)
}

// wait blocks until ctx is done (clean shutdown) or a component fails.
func (g *Group) wait(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // releases the watchers below
	failed := make(chan error, len(g.components))
	for _, c := range g.components {
		f, ok := c.(Failer)
		if !ok {
			continue
		}
		go func(name string, ch <-chan error) {
			select {
			case err := <-ch:
				failed <- fmt.Errorf("%s: %w", name, err)
			case <-ctx.Done():
			}
		}(c.Name(), f.Failed())
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-failed:
		return err
	}
}

// Func adapts a pair of functions to Component, for small pieces that need no
// type of their own.
type Func struct {
	ComponentName string
	OnStart       func(ctx context.Context) error
	OnStop        func(ctx context.Context) error
}

// Name implements Component.
func (f Func) Name() string { return f.ComponentName }

// Start implements Component.
func (f Func) Start(ctx context.Context) error {
	if f.OnStart == nil {
		return nil
	}
	return f.OnStart(ctx)
}

// Stop implements Component.
func (f Func) Stop(ctx context.Context) error {
	if f.OnStop == nil {
		return nil
	}
	return f.OnStop(ctx)
}
