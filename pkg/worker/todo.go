package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// process runs the handler over one claimed todo while the Run's
// heartbeater renews its lease (it has since the claim, and goes on until
// the lease's outcome is settled), then ends the lease: a success is queued
// to the acker (CompleteBatch), an error is reported with Fail. free gives
// the todo's slot back; it is called as soon as the completion is queued,
// so the next todo can be claimed while the CompleteBatch is on its way. A
// todo that has not started when Run begins shutting down is released
// instead, and one whose lease was lost while it waited is dropped. base is
// cancelled when the shutdown grace runs out.
func (w *Worker) process(base context.Context, r *run, l *lease, free func()) {
	todo := l.todo
	if closedChan(r.stopping) {
		if lost := l.finish(); lost != nil {
			w.report(r.hb, l, LeaseLost, lost, false)
			return
		}
		w.release(base, r.hb, l)
		return
	}
	ctx, cancel := context.WithCancelCause(base)
	defer cancel(nil)
	if !l.start(cancel) {
		w.log.Warn("lease lost while the todo waited for a handler; not run", zap.Int64("todo_id", todo.GetId()))
		w.report(r.hb, l, LeaseLost, l.lostErr(), false)
		return
	}
	ctx = context.WithValue(ctx, leaseKey{}, l) // for Progress
	ctx, span := w.startHandlerSpan(ctx, todo)
	l.setSpanContext(span.SpanContext())
	err := w.runHandler(ctx, todo)
	lost := l.finish()
	endHandlerSpan(span, err, lost)
	if lost != nil {
		w.log.Warn("lease lost while handling; result dropped", zap.Int64("todo_id", todo.GetId()), zap.NamedError("handler_error", err))
		w.report(r.hb, l, LeaseLost, lost, false)
		return
	}
	switch {
	case err != nil && errors.Is(context.Cause(base), errShutdown):
		w.release(base, r.hb, l)
	case err == nil:
		r.acks.complete(l, free)
	default:
		w.fail(base, r.hb, l, err)
	}
}

// runHandler calls the handler and turns a panic into an error.
func (w *Worker) runHandler(ctx context.Context, todo *queuev1.Todo) (err error) {
	defer func() {
		if r := recover(); r != nil {
			w.log.Error("handler panicked", zap.Int64("todo_id", todo.GetId()), zap.Any("panic", r), zap.Stack("stack"))
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return w.handler(ctx, todo)
}

// fail reports herr with Fail (retried, see settleAcks).
func (w *Worker) fail(ctx context.Context, hb *heartbeater, l *lease, herr error) {
	req := &queuev1.FailRequest{
		Id:         l.todo.GetId(),
		LeaseToken: l.todo.GetLeaseToken(),
		Error:      errorText(herr),
		DeadLetter: IsPermanent(herr),
	}
	if d, ok := retryDelay(herr); ok && !req.GetDeadLetter() {
		req.RetryAfter = durationpb.New(d)
	}
	w.settleAcks(ctx, hb, "fail", Failed, []*lease{l}, func(ctx context.Context, _ []*lease) []ackAnswer {
		resp, err := w.client.Fail(ctx, req, grpc.WaitForReady(true))
		a := answer(err, resp.GetAlready(), resp.GetTodo())
		a.dead = a.dead || (err == nil && req.GetDeadLetter())
		return []ackAnswer{a}
	})
}

// release gives l's todo back with Release (retried, see settleAcks).
func (w *Worker) release(ctx context.Context, hb *heartbeater, l *lease) {
	req := &queuev1.ReleaseRequest{Id: l.todo.GetId(), LeaseToken: l.todo.GetLeaseToken()}
	w.settleAcks(ctx, hb, "release", Released, []*lease{l}, func(ctx context.Context, _ []*lease) []ackAnswer {
		resp, err := w.client.Release(ctx, req, grpc.WaitForReady(true))
		return []ackAnswer{{err: err, already: resp.GetAlready()}}
	})
}

// errorText is the handler error as FailRequest.error: non-empty, at most
// 4096 bytes of valid UTF-8.
func errorText(err error) string {
	s := err.Error()
	if len(s) > maxErrorLen {
		s = strings.ToValidUTF8(s[:maxErrorLen], "")
	}
	if strings.TrimSpace(s) == "" {
		s = "handler failed"
	}
	return s
}
