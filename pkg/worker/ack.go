package worker

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/lifecycle"
)

// maxAckInFlight bounds the CompleteBatch calls of one Worker in flight at
// once; items queue up (and batches grow) while all are busy.
const maxAckInFlight = 4

// ackItem is one successful todo waiting for its CompleteBatch.
type ackItem struct {
	todo *queuev1.Todo
}

// acker coalesces the completions of one Run into CompleteBatch calls of up
// to AckBatch items, sent when the batch is full or AckDelay after its first
// item, whichever comes first.
type acker struct {
	w    *Worker
	base context.Context
	// hurry is closed when Run's context is cancelled: from then on batches
	// are sent without waiting for AckDelay, so shutdown is not slowed.
	hurry <-chan struct{}
	in    chan *ackItem
	sem   chan struct{}
	wg    sync.WaitGroup // the collector and the sends
	// single is set once the server answered CompleteBatch UNIMPLEMENTED:
	// from then on each item is completed with its own Complete call.
	single bool
	mu     sync.Mutex
}

func (w *Worker) startAcker(ctx, base context.Context) *acker {
	a := &acker{w: w, base: base, hurry: ctx.Done(), in: make(chan *ackItem, w.opts.Concurrency+w.opts.Buffer), sem: make(chan struct{}, maxAckInFlight)}
	a.wg.Go(a.collect)
	return a
}

// complete queues todo and calls queued. It does not wait for the outcome:
// the send counts it, and stop waits for every send, so the handler's
// goroutine is free for the next todo at once.
func (a *acker) complete(todo *queuev1.Todo, queued func()) {
	a.in <- &ackItem{todo: todo}
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
func (a *acker) gather(batch []*ackItem, size int, timer <-chan time.Time) (out []*ackItem, closed bool) {
	for len(batch) < size {
		var it *ackItem
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
		batch, closed := []*ackItem{first}, false
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

// send completes batch with CompleteBatch, retrying transport errors with
// backoff within the lease, and counts each item's outcome.
func (a *acker) send(batch []*ackItem) {
	w := a.w
	a.mu.Lock()
	single := a.single
	a.mu.Unlock()
	if single {
		a.sendSingly(batch)
		return
	}
	req := &queuev1.CompleteBatchRequest{Items: make([]*queuev1.CompleteRequest, len(batch))}
	for i, it := range batch {
		req.Items[i] = &queuev1.CompleteRequest{Id: it.todo.GetId(), LeaseToken: it.todo.GetAttempt()}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.base), time.Duration(w.opts.LeaseSeconds)*time.Second)
	defer cancel()
	bo := backoff{base: 50 * time.Millisecond, max: 2 * time.Second}
	var (
		resp *queuev1.CompleteBatchResponse
		err  error
	)
	for range ackAttempts {
		if resp, err = w.client.CompleteBatch(ctx, req); err == nil {
			break
		}
		if status.Code(err) == codes.Unimplemented {
			a.mu.Lock()
			a.single = true
			a.mu.Unlock()
			w.log.Info("server lacks CompleteBatch; completing one todo per call")
			a.sendSingly(batch)
			return
		}
		if !isTransient(err) || !lifecycle.Sleep(ctx, bo.next()) {
			break
		}
	}
	if err != nil {
		for _, it := range batch {
			w.countAckErr(it.todo, "complete", err)
		}
		return
	}
	w.stats.ackBatches.Add(1)
	results := resp.GetResults()
	var byID map[int64]queuev1.BatchOutcome
	for i, it := range batch {
		var out queuev1.BatchOutcome
		if i < len(results) && results[i].GetId() == it.todo.GetId() {
			out = results[i].GetOutcome()
		} else { // out of order or missing: match by id
			if byID == nil {
				byID = make(map[int64]queuev1.BatchOutcome, len(results))
				for _, r := range results {
					byID[r.GetId()] = r.GetOutcome()
				}
			}
			out = byID[it.todo.GetId()]
		}
		switch out {
		case queuev1.BatchOutcome_BATCH_OUTCOME_OK:
			w.stats.completed.Add(1)
		case queuev1.BatchOutcome_BATCH_OUTCOME_STALE_LEASE, queuev1.BatchOutcome_BATCH_OUTCOME_NOT_FOUND:
			w.countAckErr(it.todo, "complete", status.Error(codes.FailedPrecondition, out.String()))
		default:
			w.countAckErr(it.todo, "complete", status.Errorf(codes.Internal, "no outcome for the item (%s)", out))
		}
	}
}

// sendSingly completes each item of batch with its own Complete call.
func (a *acker) sendSingly(batch []*ackItem) {
	for _, it := range batch {
		a.w.completeSingle(a.base, it.todo)
	}
}

// countAckErr counts and logs a lease-ending call that did not succeed.
func (w *Worker) countAckErr(todo *queuev1.Todo, what string, err error) {
	log := w.log.With(zap.Int64("todo_id", todo.GetId()), zap.Int32("lease_token", todo.GetAttempt()), zap.Error(err))
	if isLeaseGone(err) {
		w.stats.leaseLost.Add(1)
		log.Warn(what + ": lease lost")
		return
	}
	w.stats.ackErrors.Add(1)
	log.Error(what + " failed; the lease will expire and the todo be retried")
}

func closedChan(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
