package groupcommit

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// run is the flusher: up to Flushers flushes at a time until Stop, then,
// once they ended, flushes until nothing is queued. Its one way out goes
// through drain, so a call queued just before Stop is never left behind.
func (b *Batcher[K, I, R]) run(ctx context.Context) {
	defer close(b.done)
	free := make(chan struct{}, b.flushers) // a token per running flush
	var wg sync.WaitGroup
	for {
		free <- struct{}{} // wait for a free flusher before looking at the queue
		if !b.due() {
			break
		}
		wg.Go(func() {
			defer func() { <-free }()
			b.flush(ctx)
		})
	}
	wg.Wait()
	b.drain(ctx)
}

// due waits until a flush is due (true): the queue is full, or the window
// of its oldest call has passed. It returns false once Stop was called.
func (b *Batcher[K, I, R]) due() bool {
	for {
		b.mu.Lock()
		n := len(b.queue)
		var deadline time.Time
		if n > 0 {
			deadline = b.queue[0].at.Add(b.window)
		}
		b.mu.Unlock()
		if n >= b.maxItems || (n > 0 && !b.clock.Now().Before(deadline)) {
			return true
		}
		var fired <-chan time.Time // nil, so never, while nothing is queued
		stopTimer := func() {}
		if n > 0 {
			fired, stopTimer = b.clock.At(deadline)
		}
		select {
		case <-fired:
		case <-b.kick: // a first call, or a full queue: look again
		case <-b.stop:
			stopTimer()
			return false
		}
		stopTimer()
	}
}

// drain flushes until nothing is queued (a flush may leave duplicates).
// Nothing new is queued once Stop has changed the state, so it ends.
func (b *Batcher[K, I, R]) drain(ctx context.Context) {
	for {
		b.mu.Lock()
		n := len(b.queue)
		b.mu.Unlock()
		if n == 0 {
			return
		}
		b.flush(ctx)
	}
}

// flush takes the queue (all of it, but with an ID each id once per
// group), sends it as one statement per group and chunk, and waits for
// them.
func (b *Batcher[K, I, R]) flush(ctx context.Context) {
	groups := b.take()
	var wg sync.WaitGroup
	for key, calls := range groups {
		if b.id != nil {
			// Stable: equal ids cannot meet here, but keep arrival order
			// for any ID that is not unique after all.
			slices.SortStableFunc(calls, func(x, y *call[K, I, R]) int { return cmp.Compare(b.id(x.item), b.id(y.item)) })
		}
		for _, chunk := range b.chunks(calls) {
			wg.Go(func() { b.send(ctx, key, chunk) })
		}
	}
	wg.Wait()
}

// chunks splits one group's calls, in order, into statements of at most
// MaxItems items and, with a Size, at most MaxSize summed size.
func (b *Batcher[K, I, R]) chunks(calls []*call[K, I, R]) [][]*call[K, I, R] {
	var out [][]*call[K, I, R]
	start, size := 0, 0
	for i, c := range calls {
		n := 0
		if b.size != nil {
			n = b.size(c.item)
		}
		if i > start && (i-start >= b.maxItems || (b.size != nil && size+n > b.maxSize)) {
			out = append(out, calls[start:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(calls) {
		out = append(out, calls[start:])
	}
	return out
}

// take removes this flush's calls from the queue, grouped by key in arrival
// order, and marks them sent; a call whose id its group already holds stays
// queued for the next flush.
func (b *Batcher[K, I, R]) take() map[K][]*call[K, I, R] {
	b.mu.Lock()
	defer b.mu.Unlock()
	groups := map[K][]*call[K, I, R]{}
	seen := map[K]map[int64]bool{} // with an ID: the ids each group holds
	var rest []*call[K, I, R]
	for _, c := range b.queue {
		if b.id != nil {
			id := b.id(c.item)
			if seen[c.key][id] {
				rest = append(rest, c) // the same row again: next flush
				continue
			}
			if seen[c.key] == nil {
				seen[c.key] = map[int64]bool{}
			}
			seen[c.key][id] = true
		}
		c.sent = true
		groups[c.key] = append(groups[c.key], c)
	}
	b.queue = rest
	return groups
}

// send runs one batch statement for calls (one key, at most MaxItems) and
// hands each call its result.
func (b *Batcher[K, I, R]) send(ctx context.Context, key K, calls []*call[K, I, R]) {
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}
	if b.onFlush != nil {
		b.onFlush(len(calls))
	}
	items := make([]I, len(calls))
	for i, c := range calls {
		items[i] = c.item
	}
	res, err := b.statement(ctx, key, items)
	if err != nil && len(calls) > 1 && ctx.Err() == nil && (b.retry == nil || b.retry(err)) {
		// The statement applied nothing; let each item meet its own fate.
		// In order, one at a time: the retries lock rows in the same
		// order, and a failing batch does not take len(calls) connections.
		for _, c := range calls {
			c.res, c.err = b.one(ctx, key, c.item)
			close(c.done)
		}
		return
	}
	for i, c := range calls {
		if err != nil {
			c.err = err
		} else {
			c.res = res[i]
		}
		close(c.done)
	}
}

// statement runs exec once, after telling the test hook, and checks that it
// kept its contract of one result per item.
func (b *Batcher[K, I, R]) statement(ctx context.Context, key K, items []I) ([]R, error) {
	if f := b.onStatement.Load(); f != nil && *f != nil {
		(*f)(len(items))
	}
	res, err := b.exec(ctx, key, items)
	if err == nil && len(res) != len(items) {
		return nil, fmt.Errorf("groupcommit %s: %d results for %d items", b.name, len(res), len(items))
	}
	return res, err
}

// clock is the time the window is measured in; tests swap it for one they
// move by hand.
type clock interface {
	Now() time.Time
	// At returns a channel that receives once t has passed, and a function
	// that releases the timer.
	At(t time.Time) (fired <-chan time.Time, stop func())
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) At(t time.Time) (<-chan time.Time, func()) {
	timer := time.NewTimer(time.Until(t))
	return timer.C, func() { timer.Stop() }
}
