package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// maxHeartbeatBatch is HeartbeatBatchRequest's item limit.
const maxHeartbeatBatch = 1000

// lease is one claimed todo from its claim (it may wait in the buffer for a
// handler) until the server confirmed how it ended, or the SDK gave up:
// the heartbeater renews it all that time, through the ack's retries.
type lease struct {
	todo  *queuev1.Todo
	beats sync.WaitGroup // heartbeat calls in flight that include this lease
	// sending is set while an ack attempt carrying the lease is in flight,
	// so that no heartbeat overtakes it (guarded by heartbeater.mu).
	sending bool
	// retried is set once its ack was retried (only the ack's goroutine).
	retried bool

	mu     sync.Mutex
	cancel context.CancelCauseFunc // set by start
	// lost is the heartbeat error that said the lease is gone before its
	// ack began: the handler is cancelled and its result dropped.
	lost error
	// acking is set when the handler returned (or the todo is released
	// unstarted): from then on only the ack's answer decides the outcome.
	acking bool
	// stale is set when a heartbeat met a stale lease while acking: our
	// own ack may have committed, so it is not renewed any more and the
	// ack's retry finds out.
	stale bool
	// expires is when the lease ends at the latest as far as this process
	// can tell (see leaseEnd).
	expires  time.Time
	reported bool
	// span is the handler's span once it started: the parent of the RPCs
	// about the lease (ackContext).
	span trace.SpanContext
	// progress is the handler's latest Progress not yet sent.
	progress *structpb.Struct
	// result is what the handler's SetResult recorded, sent with the
	// completion.
	result *structpb.Struct
}

// setSpanContext records the handler's span.
func (l *lease) setSpanContext(sc trace.SpanContext) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.span = sc
}

// spanContext is the handler's span (invalid before the handler started).
func (l *lease) spanContext() trace.SpanContext {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.span
}

// start records the running handler's cancel; false means the lease was
// lost while the todo waited, and it must not run.
func (l *lease) start(cancel context.CancelCauseFunc) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost != nil {
		return false
	}
	l.cancel = cancel
	return true
}

// finish ends the handling phase: from now on the ack decides. It returns
// the error that lost the lease before, if one did.
func (l *lease) finish() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acking = l.lost == nil
	return l.lost
}

// lose acts on a heartbeat that found the lease gone: before the ack it is
// lost (its handler is cancelled); during the ack it is only not renewed.
func (l *lease) lose(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.acking:
		l.stale = true
	case l.lost == nil:
		l.lost = fmt.Errorf("%w: %w", ErrLeaseLost, err)
		if l.cancel != nil {
			l.cancel(ErrLeaseLost)
		}
	}
}

func (l *lease) lostErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// renewable reports whether a heartbeat should carry the lease.
func (l *lease) renewable() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost == nil && !l.stale
}

// renewed records a lease end answered by the server.
func (l *lease) renewed(end time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if end.After(l.expires) {
		l.expires = end
	}
}

func (l *lease) expiry() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.expires
}

// leaseEnd is when a lease of d granted by a call sent at sent and answered
// at recv ends: the server's lease_expires_at, kept within [sent+d, recv+d]
// (the server started the lease between the two, whatever its clock says),
// or sent+d, the earliest it can end, without one.
func leaseEnd(sent, recv time.Time, at *timestamppb.Timestamp, d time.Duration) time.Time {
	lo, hi := sent.Add(d), recv.Add(d)
	if !at.IsValid() {
		return lo
	}
	t := at.AsTime()
	switch {
	case t.Before(lo):
		return lo
	case t.After(hi):
		return hi
	default:
		return lo.Add(t.Sub(lo)) // keeps lo's monotonic clock reading
	}
}

// heartbeater renews every lease of one Run with one HeartbeatBatch per
// HeartbeatInterval tick, from the claim until the lease's outcome is
// settled (report), skipping leases while an ack attempt carries them.
type heartbeater struct {
	w      *Worker
	base   context.Context // never cancelled: stop ends the loop
	mu     sync.Mutex
	leases map[*lease]struct{}
	single bool // the server answered HeartbeatBatch UNIMPLEMENTED
	quit   chan struct{}
	done   chan struct{}
}

func (w *Worker) startHeartbeater(base context.Context) *heartbeater {
	base = context.WithoutCancel(base)
	h := &heartbeater{w: w, base: base, leases: map[*lease]struct{}{}, quit: make(chan struct{}), done: make(chan struct{})}
	go h.loop(base)
	return h
}

// stop ends the loop; every lease must have been settled.
func (h *heartbeater) stop() {
	close(h.quit)
	<-h.done
}

func (h *heartbeater) add(todo *queuev1.Todo, expires time.Time) *lease {
	l := &lease{todo: todo, expires: expires}
	h.mu.Lock()
	h.leases[l] = struct{}{}
	h.mu.Unlock()
	return l
}

// drop stops renewing l for good.
func (h *heartbeater) drop(l *lease) {
	h.mu.Lock()
	delete(h.leases, l)
	h.mu.Unlock()
}

// beginSend keeps heartbeats off ls and waits for those in flight that carry
// them, so that none reaches the server after an ack attempt.
func (h *heartbeater) beginSend(ls []*lease) {
	h.setSending(ls, true)
	for _, l := range ls {
		l.beats.Wait()
	}
}

// endSend lets heartbeats renew ls again (their ack is being retried).
func (h *heartbeater) endSend(ls []*lease) { h.setSending(ls, false) }

func (h *heartbeater) setSending(ls []*lease, sending bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range ls {
		l.sending = sending
	}
}

func (h *heartbeater) loop(ctx context.Context) {
	defer close(h.done)
	t := time.NewTicker(h.w.opts.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-h.quit:
			return
		case <-t.C:
		}
		h.mu.Lock()
		ls := make([]*lease, 0, len(h.leases))
		for l := range h.leases {
			if !l.sending && l.renewable() {
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

// beat renews ls in one call and acts on the leases found gone.
func (h *heartbeater) beat(base context.Context, ls []*lease) {
	w := h.w
	d := time.Duration(w.opts.LeaseSeconds) * time.Second
	ctx, cancel := context.WithTimeout(base, max(w.opts.HeartbeatInterval, minCallTimeout))
	defer cancel()
	ctx, end := w.ackContext(ctx, "heartbeat", ls)
	defer end()
	if h.single {
		for _, l := range ls {
			sent := time.Now()
			req := &queuev1.HeartbeatRequest{
				Id: l.todo.GetId(), LeaseToken: l.todo.GetLeaseToken(), LeaseSeconds: w.opts.LeaseSeconds, Progress: l.takeProgress(),
			}
			resp, err := w.client.Heartbeat(ctx, req, grpc.WaitForReady(true))
			if err == nil {
				l.renewed(leaseEnd(sent, time.Now(), resp.GetLeaseExpiresAt(), d))
			} else if !isLeaseGone(err) {
				l.untakeProgress(req.GetProgress())
			}
			h.settle(l, err)
		}
		return
	}
	req := &queuev1.HeartbeatBatchRequest{Items: make([]*queuev1.HeartbeatRequest, len(ls))}
	for i, l := range ls {
		req.Items[i] = &queuev1.HeartbeatRequest{
			Id: l.todo.GetId(), LeaseToken: l.todo.GetLeaseToken(), LeaseSeconds: w.opts.LeaseSeconds, Progress: l.takeProgress(),
		}
	}
	sent := time.Now()
	resp, err := w.client.HeartbeatBatch(ctx, req, grpc.WaitForReady(true))
	recv := time.Now()
	if err != nil {
		// Unsent: the next call carries the progress again.
		for i, l := range ls {
			l.untakeProgress(req.GetItems()[i].GetProgress())
		}
	}
	if status.Code(err) == codes.Unimplemented {
		w.log.Info("server lacks HeartbeatBatch; renewing one lease per call")
		h.single = true
		h.beat(base, ls)
		return
	}
	if err != nil {
		// Try again on the next tick; the leases have two more intervals.
		w.log.Warn("heartbeat failed", zap.Int("todos", len(ls)), zap.Error(err))
		return
	}
	w.stats.heartbeatBatches.Add(1)
	results := resp.GetResults()
	byID := make(map[int64]*queuev1.HeartbeatBatchResult, len(results))
	for _, r := range results {
		byID[r.GetId()] = r
	}
	for i, l := range ls {
		r := byID[l.todo.GetId()]
		if i < len(results) && results[i].GetId() == l.todo.GetId() {
			r = results[i]
		}
		switch o := r.GetOutcome(); o {
		case queuev1.BatchOutcome_BATCH_OUTCOME_OK:
			l.renewed(leaseEnd(sent, recv, r.GetLeaseExpiresAt(), d))
		case queuev1.BatchOutcome_BATCH_OUTCOME_STALE_LEASE:
			h.settle(l, status.Error(codes.FailedPrecondition, o.String()))
		case queuev1.BatchOutcome_BATCH_OUTCOME_NOT_FOUND:
			h.settle(l, status.Error(codes.NotFound, o.String()))
		default:
			w.log.Warn("heartbeat: no outcome for todo", zap.Int64("todo_id", l.todo.GetId()), zap.Stringer("outcome", o))
		}
	}
}

// settle acts on one lease's heartbeat error.
func (h *heartbeater) settle(l *lease, err error) {
	switch {
	case err == nil:
	case isLeaseGone(err):
		l.lose(err)
	default:
		h.w.log.Warn("heartbeat failed", zap.Int64("todo_id", l.todo.GetId()), zap.Error(err))
	}
}
