package worker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// maxHeartbeatBatch is HeartbeatBatchRequest's item limit.
const maxHeartbeatBatch = 1000

// lease is one claimed todo, from its claim (it may wait in the buffer for
// a handler) to the end of its handling: whether the server said the lease
// is gone, the handler's cancel once it runs, and the heartbeat calls that
// carry it.
type lease struct {
	todo  *queuev1.Todo
	lost  atomic.Bool
	beats sync.WaitGroup // heartbeat calls in flight that include this lease

	mu     sync.Mutex
	cancel context.CancelCauseFunc // set by start
}

// start records the running handler's cancel; false means the lease was
// lost while the todo waited, and it must not run.
func (l *lease) start(cancel context.CancelCauseFunc) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost.Load() {
		return false
	}
	l.cancel = cancel
	return true
}

// lose marks the lease gone and cancels its handler, if one runs.
func (l *lease) lose() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lost.Store(true)
	if l.cancel != nil {
		l.cancel(ErrLeaseLost)
	}
}

// heartbeater renews every lease of one Run with one HeartbeatBatch per
// HeartbeatInterval tick.
type heartbeater struct {
	w      *Worker
	mu     sync.Mutex
	leases map[*lease]struct{}
	single bool // the server answered HeartbeatBatch UNIMPLEMENTED
	quit   chan struct{}
	done   chan struct{}
}

func (w *Worker) startHeartbeater(base context.Context) *heartbeater {
	h := &heartbeater{w: w, leases: map[*lease]struct{}{}, quit: make(chan struct{}), done: make(chan struct{})}
	go h.loop(base)
	return h
}

func (h *heartbeater) stop() {
	close(h.quit)
	<-h.done
}

func (h *heartbeater) add(todo *queuev1.Todo) *lease {
	l := &lease{todo: todo}
	h.mu.Lock()
	h.leases[l] = struct{}{}
	h.mu.Unlock()
	return l
}

// remove stops renewing l and waits for a heartbeat in flight that carries
// it, so that none reaches the server after the todo's Complete or Fail.
func (h *heartbeater) remove(l *lease) {
	h.mu.Lock()
	delete(h.leases, l)
	h.mu.Unlock()
	l.beats.Wait()
}

func (h *heartbeater) loop(ctx context.Context) {
	defer close(h.done)
	t := time.NewTicker(h.w.opts.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-h.quit:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		ls := make([]*lease, 0, len(h.leases))
		for l := range h.leases {
			if !l.lost.Load() {
				l.beats.Add(1)
				ls = append(ls, l)
			}
		}
		h.mu.Unlock()
		for len(ls) > 0 {
			n := min(len(ls), maxHeartbeatBatch)
			h.beat(ctx, ls[:n])
			for _, l := range ls[:n] {
				l.beats.Done()
			}
			ls = ls[n:]
		}
	}
}

// beat renews ls in one call and cancels the handlers whose lease is gone.
func (h *heartbeater) beat(base context.Context, ls []*lease) {
	w := h.w
	ctx, cancel := context.WithTimeout(base, max(w.opts.HeartbeatInterval, minHeartbeatTimeout))
	defer cancel()
	if h.single {
		for _, l := range ls {
			_, err := w.client.Heartbeat(ctx, &queuev1.HeartbeatRequest{
				Id: l.todo.GetId(), LeaseToken: l.todo.GetAttempt(), LeaseSeconds: w.opts.LeaseSeconds,
			})
			h.settle(base, l, err)
		}
		return
	}
	req := &queuev1.HeartbeatBatchRequest{Items: make([]*queuev1.HeartbeatRequest, len(ls))}
	for i, l := range ls {
		req.Items[i] = &queuev1.HeartbeatRequest{Id: l.todo.GetId(), LeaseToken: l.todo.GetAttempt(), LeaseSeconds: w.opts.LeaseSeconds}
	}
	resp, err := w.client.HeartbeatBatch(ctx, req)
	if status.Code(err) == codes.Unimplemented {
		w.log.Info("server lacks HeartbeatBatch; renewing one lease per call")
		h.single = true
		h.beat(base, ls)
		return
	}
	if err != nil {
		if base.Err() == nil {
			// Try again on the next tick; the leases have two more intervals.
			w.log.Warn("heartbeat failed", zap.Int("todos", len(ls)), zap.Error(err))
		}
		return
	}
	w.stats.heartbeatBatches.Add(1)
	out := make(map[int64]queuev1.BatchOutcome, len(resp.GetResults()))
	for _, r := range resp.GetResults() {
		out[r.GetId()] = r.GetOutcome()
	}
	for i, l := range ls {
		o := out[l.todo.GetId()]
		if rs := resp.GetResults(); i < len(rs) && rs[i].GetId() == l.todo.GetId() {
			o = rs[i].GetOutcome()
		}
		switch o {
		case queuev1.BatchOutcome_BATCH_OUTCOME_STALE_LEASE, queuev1.BatchOutcome_BATCH_OUTCOME_NOT_FOUND:
			h.settle(base, l, status.Error(codes.FailedPrecondition, o.String()))
		case queuev1.BatchOutcome_BATCH_OUTCOME_OK:
		default:
			w.log.Warn("heartbeat: no outcome for todo", zap.Int64("todo_id", l.todo.GetId()))
		}
	}
}

// settle acts on one lease's heartbeat error.
func (h *heartbeater) settle(base context.Context, l *lease, err error) {
	switch {
	case err == nil:
	case isLeaseGone(err):
		l.lose()
	case base.Err() == nil:
		h.w.log.Warn("heartbeat failed", zap.Int64("todo_id", l.todo.GetId()), zap.Error(err))
	}
}
