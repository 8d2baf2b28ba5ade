package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/lifecycle"
)

// ackAttempts bounds the tries of one Complete, Fail or Release that meets
// transient errors.
const ackAttempts = 5

// minHeartbeatTimeout is the least time a Heartbeat call is given, however
// short HeartbeatInterval is.
const minHeartbeatTimeout = time.Second

// process runs the handler over one claimed todo while the Run's
// heartbeater renews its lease (it has since the claim), then ends the
// lease: a success is queued to the acker (CompleteBatch). free gives the
// todo's slot back; it is called as soon as the completion is queued, so the
// next todo can be claimed while the CompleteBatch is on its way. A todo
// that has not started when Run begins shutting down is released instead,
// and one whose lease was lost while it waited is dropped. base is cancelled
// when the shutdown grace runs out.
func (w *Worker) process(base context.Context, r *run, l *lease, free func()) {
	todo := l.todo
	if closedChan(r.stopping) {
		r.hb.remove(l)
		w.release(base, todo)
		return
	}
	ctx, cancel := context.WithCancelCause(base)
	defer cancel(nil)
	if !l.start(cancel) {
		r.hb.remove(l)
		w.stats.leaseLost.Add(1)
		w.log.Warn("lease lost while the todo waited for a handler; not run", zap.Int64("todo_id", todo.GetId()),
			zap.Int32("lease_token", todo.GetAttempt()))
		return
	}
	err := w.runHandler(ctx, todo)
	// A heartbeat in flight is let finish, so that none reaches the server
	// after the Complete or Fail below.
	r.hb.remove(l)

	switch {
	case l.lost.Load():
		w.stats.leaseLost.Add(1)
		w.log.Warn("lease lost while handling; result dropped", zap.Int64("todo_id", todo.GetId()),
			zap.Int32("lease_token", todo.GetAttempt()), zap.Error(err))
	case err != nil && errors.Is(context.Cause(base), errShutdown):
		w.release(base, todo)
	case err == nil:
		r.acks.complete(todo, free)
	default:
		w.fail(base, todo, err)
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

// completeSingle completes one todo with its own Complete call (for servers
// without CompleteBatch).
func (w *Worker) completeSingle(ctx context.Context, todo *queuev1.Todo) {
	if w.ack(ctx, todo, "complete", func(ctx context.Context) error {
		_, err := w.client.Complete(ctx, &queuev1.CompleteRequest{Id: todo.GetId(), LeaseToken: todo.GetAttempt()})
		return err
	}) {
		w.stats.completed.Add(1)
	}
}

func (w *Worker) fail(ctx context.Context, todo *queuev1.Todo, herr error) {
	req := &queuev1.FailRequest{
		Id:         todo.GetId(),
		LeaseToken: todo.GetAttempt(),
		Error:      errorText(herr),
		DeadLetter: IsPermanent(herr),
	}
	if d, ok := retryDelay(herr); ok && !req.GetDeadLetter() {
		req.RetryAfter = durationpb.New(d)
	}
	if w.ack(ctx, todo, "fail", func(ctx context.Context) error {
		_, err := w.client.Fail(ctx, req)
		return err
	}) {
		w.stats.failed.Add(1)
		if req.GetDeadLetter() {
			w.stats.deadLettered.Add(1)
		}
	}
}

func (w *Worker) release(ctx context.Context, todo *queuev1.Todo) {
	if w.ack(ctx, todo, "release", func(ctx context.Context) error {
		_, err := w.client.Release(ctx, &queuev1.ReleaseRequest{Id: todo.GetId(), LeaseToken: todo.GetAttempt()})
		return err
	}) {
		w.stats.released.Add(1)
	}
}

// ack makes one lease-ending call, retrying transient errors within the
// lease duration. It is not cut short by ctx's cancellation (the result of
// finished work must still be reported at shutdown). It reports whether the
// call succeeded; failures are counted and logged here.
func (w *Worker) ack(ctx context.Context, todo *queuev1.Todo, what string, call func(context.Context) error) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(w.opts.LeaseSeconds)*time.Second)
	defer cancel()
	bo := backoff{base: 50 * time.Millisecond, max: 2 * time.Second}
	var err error
	for range ackAttempts {
		if err = call(ctx); err == nil {
			return true
		}
		if isLeaseGone(err) || !isTransient(err) || !lifecycle.Sleep(ctx, bo.next()) {
			break
		}
	}
	w.countAckErr(todo, what, err)
	return false
}

// isLeaseGone reports whether err says the lease token is stale.
func isLeaseGone(err error) bool {
	c := status.Code(err)
	return c == codes.FailedPrecondition || c == codes.NotFound
}

func isTransient(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted:
		return true
	default:
		return false
	}
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
