package queue

import (
	"context"
	"sync"
	"time"

	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// tokenWait is a waiting claim's watch on a rate-limited queue's next token
// (store.NextToken): it sleeps until the token is due instead of polling.
// One waiting claim per queue per node holds the watch (Server.rateWatch),
// so a token due brings one claim statement from this node, not one per
// waiting claim; the others wait for wake-ups and the poll tick, and a
// holder leaving with work wakes one of them to take the watch over.
type tokenWait struct {
	c     <-chan time.Time
	timer *time.Timer
	gate  *sync.Mutex
}

// start takes the queue's watch, if it is free and a rate holds the queue
// back for less than a poll interval, and arms the timer.
func (t *tokenWait) start(ctx context.Context, s *Server, c store.Caller, k queueKey) {
	g, _ := s.rateWatch.LoadOrStore(k, &sync.Mutex{})
	gate := g.(*sync.Mutex) //nolint:forcetypeassert // only *sync.Mutex is stored
	if !gate.TryLock() {
		return
	}
	d, err := s.store.NextToken(ctx, c, k.queue)
	if err != nil || d <= 0 || d >= s.opts.PollInterval {
		gate.Unlock()
		return
	}
	t.gate, t.timer = gate, time.NewTimer(d)
	t.c = t.timer.C
}

// stop disarms the timer and lets the watch go.
func (t *tokenWait) stop() {
	if t.gate == nil {
		return
	}
	t.timer.Stop()
	t.gate.Unlock()
	*t = tokenWait{}
}
