package worker

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// maxAckInFlight bounds the CompleteBatch calls of one Worker in flight at
// once; items queue up (and batches grow) while all are busy.
const maxAckInFlight = 4

// acker coalesces the completions of one Run into CompleteBatch calls of up
// to AckBatch items, sent when the batch is full or AckDelay after its first
// item, whichever comes first.
type acker struct {
	w  *Worker
	hb *heartbeater
	// hurry is closed when Run's context is cancelled: from then on batches
	// are sent without waiting for AckDelay, so shutdown is not slowed.
	hurry <-chan struct{}
	in    chan *lease
	sem   chan struct{}
	wg    sync.WaitGroup // the collector and the sends
	// single is set once the server answered CompleteBatch UNIMPLEMENTED:
	// from then on each item is completed with its own Complete call.
	single bool
	mu     sync.Mutex
}

func (w *Worker) startAcker(ctx context.Context, hb *heartbeater) *acker {
	a := &acker{w: w, hb: hb, hurry: ctx.Done(), in: make(chan *lease, w.opts.Concurrency+w.opts.Buffer), sem: make(chan struct{}, maxAckInFlight)}
	a.wg.Go(a.collect)
	return a
}

// complete queues l and calls queued. It does not wait for the outcome:
// the send reports it, and stop waits for every send, so the handler's
// goroutine is free for the next todo at once.
func (a *acker) complete(l *lease, queued func()) {
	a.in <- l
	queued()
}

// stop flushes what is queued and waits for every send. No complete may be
// called after stop.
func (a *acker) stop() {
	close(a.in)
	a.wg.Wait()
}

// gather adds items from a.in to batch until it holds size, a.in closes
// (closed), or, with a timer, that timer or a.hurry fires; without one
// (nil), it takes only what is queued now.
func (a *acker) gather(batch []*lease, size int, timer <-chan time.Time) (out []*lease, closed bool) {
	for len(batch) < size {
		var it *lease
		var ok bool
		if timer != nil {
			select {
			case it, ok = <-a.in:
			case <-timer:
				return batch, false
			case <-a.hurry:
				return batch, false
			}
		} else {
			select {
			case it, ok = <-a.in:
			default:
				return batch, false
			}
		}
		if !ok {
			return batch, true
		}
		batch = append(batch, it)
	}
	return batch, false
}

func (a *acker) collect() {
	size, delay := a.w.opts.AckBatch, max(a.w.opts.AckDelay, 0)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		first, ok := <-a.in
		if !ok {
			return
		}
		batch, closed := []*lease{first}, false
		if delay > 0 && !closedChan(a.hurry) {
			timer.Reset(delay)
			batch, closed = a.gather(batch, size, timer.C)
			timer.Stop()
		}
		a.sem <- struct{}{}
		if !closed {
			// Top up with whatever queued meanwhile (all sends may have been busy).
			batch, closed = a.gather(batch, size, nil)
		}
		a.wg.Go(func() {
			defer func() { <-a.sem }()
			a.send(batch)
		})
		if closed {
			return
		}
	}
}

// send completes batch with CompleteBatch (retried, see settleAcks) and
// reports each item's outcome.
func (a *acker) send(batch []*lease) {
	a.w.settleAcks(a.hb.base, a.hb, "complete", Completed, batch, a.completeBatch)
}

// completeBatch is one attempt of a CompleteBatch; against a server without
// it, one Complete per item.
func (a *acker) completeBatch(ctx context.Context, ls []*lease) []ackAnswer {
	w := a.w
	a.mu.Lock()
	single := a.single
	a.mu.Unlock()
	if single {
		return w.completeEach(ctx, ls)
	}
	req := &queuev1.CompleteBatchRequest{Items: make([]*queuev1.CompleteRequest, len(ls))}
	for i, l := range ls {
		req.Items[i] = l.completeRequest()
	}
	resp, err := w.client.CompleteBatch(ctx, req, grpc.WaitForReady(true))
	if status.Code(err) == codes.Unimplemented {
		a.mu.Lock()
		a.single = true
		a.mu.Unlock()
		w.log.Info("server lacks CompleteBatch; completing one todo per call")
		return w.completeEach(ctx, ls)
	}
	answers := make([]ackAnswer, len(ls))
	if err != nil {
		for i := range answers {
			answers[i].err = err
		}
		return answers
	}
	w.stats.ackBatches.Add(1)
	results := resp.GetResults()
	var byID map[int64]queuev1.BatchOutcome
	for i, l := range ls {
		var out queuev1.BatchOutcome
		if i < len(results) && results[i].GetId() == l.todo.GetId() {
			out = results[i].GetOutcome()
		} else { // out of order or missing: match by id
			if byID == nil {
				byID = make(map[int64]queuev1.BatchOutcome, len(results))
				for _, r := range results {
					byID[r.GetId()] = r.GetOutcome()
				}
			}
			out = byID[l.todo.GetId()]
		}
		switch out {
		case queuev1.BatchOutcome_BATCH_OUTCOME_OK:
		case queuev1.BatchOutcome_BATCH_OUTCOME_ALREADY:
			answers[i].already = true
		case queuev1.BatchOutcome_BATCH_OUTCOME_STALE_LEASE:
			answers[i].err = status.Error(codes.FailedPrecondition, out.String())
		case queuev1.BatchOutcome_BATCH_OUTCOME_NOT_FOUND:
			answers[i].err = status.Error(codes.NotFound, out.String())
		default:
			answers[i].err = status.Errorf(codes.Internal, "no outcome for the item (%s)", out)
		}
	}
	return answers
}

// maxSingleAcks bounds the Complete calls of one attempt in flight at once
// (servers without CompleteBatch).
const maxSingleAcks = 16

// completeEach is one attempt of completing each of ls with its own
// Complete call.
func (w *Worker) completeEach(ctx context.Context, ls []*lease) []ackAnswer {
	answers := make([]ackAnswer, len(ls))
	sem := make(chan struct{}, maxSingleAcks)
	var wg sync.WaitGroup
	for i, l := range ls {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			resp, err := w.client.Complete(ctx, l.completeRequest(), grpc.WaitForReady(true))
			answers[i] = answer(err, resp.GetAlready(), resp.GetTodo())
		})
	}
	wg.Wait()
	return answers
}

func closedChan(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
