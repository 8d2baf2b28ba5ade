package realtime

import (
	"context"
	"sync"
	"time"

	"github.com/switchboard/switchboard/pkg/lifecycle"
)

// pump hands this node's ephemeral events (published here or arriving from
// other nodes) to the hub, at most once per gap: under load the events of a
// gap reach each subscriber as one outbound, and so as one message for a
// batching client, instead of one wake-up, write and HTTP/2 frame each. The
// first event after a quiet spell goes at once. Adding never blocks: past
// max queued events, new ones are dropped and counted (ephemeral delivery
// is best effort; a publisher is never held up).
type pump struct {
	hub     *hub
	gap     time.Duration
	max     int
	dropped func()

	mu    sync.Mutex
	queue []keyed
	kick  chan struct{}
}

func newPump(h *hub, gap time.Duration, maxQueued int, dropped func()) *pump {
	return &pump{hub: h, gap: gap, max: maxQueued, dropped: dropped, kick: make(chan struct{}, 1)}
}

// add queues e for the next dispatch.
func (p *pump) add(e keyed) {
	p.mu.Lock()
	full := len(p.queue) >= p.max
	if !full {
		p.queue = append(p.queue, e)
	}
	p.mu.Unlock()
	if full {
		p.dropped()
		return
	}
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// component runs the pump from Start to Stop; events still queued at Stop
// are dropped with the node's streams.
func (p *pump) component() *lifecycle.Goroutines {
	return lifecycle.NewGoroutines(Name+"-ephemeral", p.run)
}

func (p *pump) run(ctx context.Context) {
	var began time.Time
	var spare []keyed
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		}
		if wait := p.gap - time.Since(began); wait > 0 && !lifecycle.Sleep(ctx, wait) {
			return
		}
		began = time.Now()
		p.mu.Lock()
		evs := p.queue
		p.queue = spare[:0]
		p.mu.Unlock()
		if len(evs) > 0 {
			p.hub.dispatchEphemeral(evs)
		}
		// The outbounds hold the parts, not this slice: it can be reused.
		clear(evs)
		spare = evs
	}
}
