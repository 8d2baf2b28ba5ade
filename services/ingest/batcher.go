package ingest

import (
	"context"
	"sync"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/services/ingest/internal/store"
)

// maxBatch bounds one group-commit statement.
const maxBatch = 500

// batcher is the group commit of the webhook edge: concurrent requests for
// one endpoint share one statement (store.IngestBatch) and so one commit,
// and each request is answered after the commit that carried its event.
// One flush runs at a time; requests arriving meanwhile queue for the next
// one, so batches grow with load and cost nothing when it is light (a lone
// request is flushed at once). A failed batch is retried item by item, so
// one bad event never fails another request. Before Start and after Stop
// every call runs on its own.
type batcher struct {
	st *store.Store

	mu      sync.Mutex
	running bool
	queue   map[batchKey][]*batchCall
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	// onStatement, when set, is told each batch statement's size (tests).
	onStatement func(n int)
}

// batchKey is what the events of one statement share.
type batchKey struct {
	human, endpoint uuid.UUID
	queue, kind     string
	agent           uuid.UUID // uuid.Nil: none
}

type batchCall struct {
	event store.Event
	res   store.Stored
	err   error
	done  chan struct{}
}

func newBatcher(st *store.Store) *batcher {
	return &batcher{st: st, queue: map[batchKey][]*batchCall{}, kick: make(chan struct{}, 1)}
}

// Name implements lifecycle.Component.
func (b *batcher) Name() string { return Name + "-group-commit" }

// Start implements lifecycle.Component.
func (b *batcher) Start(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running || b.done != nil {
		return nil
	}
	b.running, b.stop, b.done = true, make(chan struct{}), make(chan struct{})
	// Statements outlive the start context; Stop ends the loop.
	go b.loop(context.WithoutCancel(ctx))
	return nil
}

// Stop implements lifecycle.Component: new calls run on their own; queued
// ones are flushed before it returns (or ctx ends).
func (b *batcher) Stop(ctx context.Context) error {
	b.mu.Lock()
	if b.running {
		b.running = false
		close(b.stop)
	}
	done := b.done
	b.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ingest stores e for target t, sharing a statement with concurrent calls
// for the same endpoint and target when the batcher runs.
func (b *batcher) ingest(ctx context.Context, e store.Event, t store.Target) (store.Stored, error) {
	b.mu.Lock()
	if !b.running || e.BodySHA256 != nil || e.EndpointID == nil {
		b.mu.Unlock()
		return b.st.Ingest(ctx, e, t)
	}
	k := batchKey{human: e.HumanID, endpoint: *e.EndpointID, queue: t.Queue, kind: t.Kind}
	if t.AgentID != nil {
		k.agent = *t.AgentID
	}
	c := &batchCall{event: e, done: make(chan struct{})}
	b.queue[k] = append(b.queue[k], c)
	b.mu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
	<-c.done // the statement carrying it ends under storeTimeout
	return c.res, c.err
}

func (b *batcher) loop(ctx context.Context) {
	defer close(b.done)
	for {
		select {
		case <-b.kick:
		case <-b.stop:
			b.flush(ctx) // what queued before Stop
			return
		}
		b.flush(ctx)
	}
}

// flush runs everything queued now: one statement per group (chunks of
// maxBatch), the groups in parallel.
func (b *batcher) flush(ctx context.Context) {
	b.mu.Lock()
	queued := b.queue
	b.queue = map[batchKey][]*batchCall{}
	b.mu.Unlock()
	var wg sync.WaitGroup
	for k, calls := range queued {
		for len(calls) > 0 {
			n := min(len(calls), maxBatch)
			chunk := calls[:n]
			calls = calls[n:]
			wg.Go(func() { b.run(ctx, k, chunk) })
		}
	}
	wg.Wait()
}

func (b *batcher) run(ctx context.Context, k batchKey, calls []*batchCall) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	t := store.Target{Queue: k.queue, Kind: k.kind}
	if k.agent != uuid.Nil {
		t.AgentID = &k.agent
	}
	events := make([]store.Event, len(calls))
	for i, c := range calls {
		events[i] = c.event
	}
	if b.onStatement != nil {
		b.onStatement(len(calls))
	}
	res, err := b.st.IngestBatch(ctx, events, t)
	if err != nil {
		// One statement: nothing was stored. Each on its own, so one bad
		// event fails only its own request.
		for _, c := range calls {
			c.res, c.err = b.st.Ingest(ctx, c.event, t)
			close(c.done)
		}
		return
	}
	for i, c := range calls {
		c.res = res[i]
		close(c.done)
	}
}
