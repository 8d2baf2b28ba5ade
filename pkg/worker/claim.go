package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// claimLoop claims while ctx lasts and starts one goroutine per todo.
func (w *Worker) claimLoop(ctx, base context.Context, slots chan struct{}, wg *sync.WaitGroup) error {
	errBackoff := backoff{base: w.opts.BackoffMin, max: w.opts.BackoffMax}
	emptyBackoff := backoff{base: 10 * time.Millisecond, max: time.Second}
	quickEmpty := 0
	for {
		// Take at least one free slot, then as many more as are free, up to
		// Prefetch.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		n := 1
	fill:
		for n < w.opts.Prefetch {
			select {
			case slots <- struct{}{}:
				n++
			default:
				break fill
			}
		}

		start := time.Now()
		todos, err := w.claim(ctx, n)
		if len(todos) > n { // a server bug; never hold more than we have room for
			w.log.Warn("claim returned more todos than asked for", zap.Int("asked", n), zap.Int("got", len(todos)))
			for _, t := range todos[n:] {
				w.release(base, t)
			}
			todos = todos[:n]
		}
		for range n - len(todos) {
			<-slots
		}
		w.stats.claimed.Add(int64(len(todos)))
		for _, t := range todos {
			wg.Go(func() {
				defer func() { <-slots }()
				w.process(base, t)
			})
		}

		if ctx.Err() != nil {
			return nil //nolint:nilerr // stopping: a claim error now is the cancellation
		}
		switch {
		case err != nil:
			if isFatal(err) {
				w.log.Error("claim failed; stopping", zap.Error(err))
				return fmt.Errorf("worker: claim from queue %q: %w", w.queue, err)
			}
			w.stats.claimErrors.Add(1)
			d := errBackoff.next()
			w.log.Warn("claim failed; backing off", zap.Error(err), zap.Duration("backoff", d))
			if !sleep(ctx, d) {
				return nil
			}
		case len(todos) > 0:
			errBackoff.reset()
			emptyBackoff.reset()
			quickEmpty = 0
		default:
			errBackoff.reset()
			// An empty answer well before Wait is normal now and then (a
			// wake-up someone else won, a server shutting down); many in a
			// row mean the server does not long-poll, so slow down.
			if time.Since(start) >= w.opts.Wait/4 {
				quickEmpty = 0
				emptyBackoff.reset()
				continue
			}
			if quickEmpty++; quickEmpty >= 3 && !sleep(ctx, emptyBackoff.next()) {
				return nil
			}
		}
	}
}

func (w *Worker) claim(ctx context.Context, n int) ([]*queuev1.Todo, error) {
	ctx, cancel := context.WithTimeout(ctx, w.opts.Wait+claimSlack)
	defer cancel()
	resp, err := w.client.Claim(ctx, &queuev1.ClaimRequest{
		Queue:        w.queue,
		WorkerId:     w.opts.WorkerID,
		MaxTodos:     int32(n),
		LeaseSeconds: w.opts.LeaseSeconds,
		Wait:         durationpb.New(w.opts.Wait),
	})
	if err != nil {
		return nil, err
	}
	return resp.GetTodos(), nil
}

// isFatal reports whether a Claim error will not go away by retrying.
func isFatal(err error) bool {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.Unauthenticated, codes.PermissionDenied, codes.Unimplemented:
		return true
	default:
		return false
	}
}

// sleep waits d or until ctx is done; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
