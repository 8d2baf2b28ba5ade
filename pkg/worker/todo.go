package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// ackAttempts bounds the tries of one Complete, Fail or Release that meets
// transient errors.
const ackAttempts = 5

// minHeartbeatTimeout is the least time a Heartbeat call is given, however
// short HeartbeatInterval is.
const minHeartbeatTimeout = time.Second

// process runs the handler over one claimed todo with a heartbeat beside it,
// then ends the lease. base is cancelled when the shutdown grace runs out.
func (w *Worker) process(base context.Context, todo *queuev1.Todo) {
	ctx, cancel := context.WithCancelCause(base)
	defer cancel(nil)

	var lost atomic.Bool
	stopHeartbeat, hbDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(hbDone)
		if w.heartbeat(ctx, stopHeartbeat, todo) {
			lost.Store(true)
			cancel(ErrLeaseLost)
		}
	}()

	err := w.runHandler(ctx, todo)
	// A heartbeat in flight is let finish, so that none reaches the server
	// after the Complete or Fail below.
	close(stopHeartbeat)
	<-hbDone

	log := w.log.With(zap.Int64("todo_id", todo.GetId()), zap.Int32("lease_token", todo.GetAttempt()))
	switch {
	case lost.Load():
		w.stats.leaseLost.Add(1)
		log.Warn("lease lost while handling; result dropped", zap.Error(err))
	case err != nil && errors.Is(context.Cause(base), errShutdown):
		w.release(base, todo)
	case err == nil:
		w.complete(base, todo)
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

// heartbeat renews the todo's lease every HeartbeatInterval until stop is
// closed or ctx ends. It reports true when the server said the lease is gone.
func (w *Worker) heartbeat(ctx context.Context, stop <-chan struct{}, todo *queuev1.Todo) bool {
	t := time.NewTicker(w.opts.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return false
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, max(w.opts.HeartbeatInterval, minHeartbeatTimeout))
		_, err := w.client.Heartbeat(rctx, &queuev1.HeartbeatRequest{
			Id:           todo.GetId(),
			LeaseToken:   todo.GetAttempt(),
			LeaseSeconds: w.opts.LeaseSeconds,
		})
		cancel()
		switch {
		case err == nil:
		case isLeaseGone(err):
			return true
		case ctx.Err() != nil:
			return false
		default:
			// Try again on the next tick; the lease has two more intervals.
			w.log.Warn("heartbeat failed", zap.Int64("todo_id", todo.GetId()), zap.Error(err))
		}
	}
}

func (w *Worker) complete(ctx context.Context, todo *queuev1.Todo) {
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
		if isLeaseGone(err) || !isTransient(err) || !sleep(ctx, bo.next()) {
			break
		}
	}
	log := w.log.With(zap.Int64("todo_id", todo.GetId()), zap.Int32("lease_token", todo.GetAttempt()), zap.Error(err))
	if isLeaseGone(err) {
		w.stats.leaseLost.Add(1)
		log.Warn(what + ": lease lost")
	} else {
		w.stats.ackErrors.Add(1)
		log.Error(what + " failed; the lease will expire and the todo be retried")
	}
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
