package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// maxClaimsInFlight bounds the Claim calls of one Worker in flight at once.
const maxClaimsInFlight = 2

// claimResult is the answer to one Claim of n todos.
type claimResult struct {
	n     int
	wait  time.Duration
	start time.Time
	end   time.Time // when the answer came
	todos []*queuev1.Todo
	err   error
}

// claimLoop claims while ctx lasts and starts one goroutine per todo. It
// keeps the pipeline full: as soon as handler slots free up it claims them
// (up to Prefetch per call, with at most maxClaimsInFlight calls at once), a
// second concurrent Claim only for at least half a Prefetch, and it
// long-polls (Options.Wait) only when the last answer suggested an empty
// queue (fewer todos than asked for).
func (w *Worker) claimLoop(ctx, base context.Context, r *run, wg *sync.WaitGroup) error {
	errBackoff := backoff{base: w.opts.BackoffMin, max: w.opts.BackoffMax}
	emptyBackoff := backoff{base: 10 * time.Millisecond, max: time.Second}
	quickEmpty := 0
	claimCtx, stopClaims := context.WithCancel(ctx)
	defer stopClaims()

	free, inFlight := w.opts.Concurrency+w.opts.Buffer, 0
	results := make(chan claimResult, maxClaimsInFlight)
	lookedEmpty := true // long-poll first: the server answers at once when there is work
	var (
		pause    <-chan time.Time // set while backing off
		pauseT   *time.Timer
		stopping bool
		fatal    error
	)
	done := ctx.Done()
	for {
		for !stopping && pause == nil && free > 0 && inFlight < maxClaimsInFlight {
			if inFlight > 0 && (lookedEmpty || free < max(1, w.opts.Prefetch/2)) {
				break
			}
			n := min(free, w.opts.Prefetch)
			wait := time.Duration(0)
			if lookedEmpty {
				wait = w.opts.Wait
			}
			free -= n
			inFlight++
			go func() {
				start := time.Now()
				todos, err := w.claim(claimCtx, n, wait)
				results <- claimResult{n: n, wait: wait, start: start, end: time.Now(), todos: todos, err: err}
			}()
		}
		if stopping && inFlight == 0 {
			if pauseT != nil {
				pauseT.Stop()
			}
			return fatal
		}
		select {
		case <-r.freed:
			free++
		drain:
			for {
				select {
				case <-r.freed:
					free++
				default:
					break drain
				}
			}
		case <-pause:
			pause = nil
		case <-done:
			done = nil
			stopping = true
		case res := <-results:
			inFlight--
			todos := res.todos
			w.stats.claimed.Add(int64(len(todos)))
			if len(todos) > res.n { // a server bug; never hold more than we have room for
				w.log.Warn("claim returned more todos than asked for", zap.Int("asked", res.n), zap.Int("got", len(todos)))
				for _, t := range todos[res.n:] {
					l := r.hb.add(t, w.claimedUntil(res, t))
					if l.finish() == nil {
						wg.Go(func() { w.release(base, r.hb, l) })
					}
				}
				todos = todos[:res.n]
			}
			free += res.n - len(todos)
			for _, t := range todos {
				w.dispatch(base, r, wg, t, w.claimedUntil(res, t))
			}
			if stopping || ctx.Err() != nil {
				continue // stopping: a claim error now is the cancellation
			}
			switch err := res.err; {
			case err != nil:
				if isFatal(err) {
					w.log.Error("claim failed; stopping", zap.Error(err))
					fatal = fmt.Errorf("worker: claim from queue %q: %w", w.queue, err)
					stopping = true
					stopClaims()
					continue
				}
				w.stats.claimErrors.Add(1)
				d := errBackoff.next()
				w.log.Warn("claim failed; backing off", zap.Error(err), zap.Duration("backoff", d))
				pauseT = time.NewTimer(d)
				pause = pauseT.C
			case len(todos) == res.n:
				errBackoff.reset()
				emptyBackoff.reset()
				quickEmpty = 0
				lookedEmpty = false
			case len(todos) > 0:
				errBackoff.reset()
				emptyBackoff.reset()
				quickEmpty = 0
				lookedEmpty = true
			default:
				errBackoff.reset()
				lookedEmpty = true
				// An empty answer well before Wait is normal now and then (a
				// wake-up someone else won, a server shutting down); many in a
				// row mean the server does not long-poll, so slow down.
				if res.wait == 0 || time.Since(res.start) >= res.wait/4 {
					quickEmpty = 0
					emptyBackoff.reset()
					continue
				}
				if quickEmpty++; quickEmpty >= 3 {
					pauseT = time.NewTimer(emptyBackoff.next())
					pause = pauseT.C
				}
			}
		}
	}
}

// dispatch starts the lease's renewal and hands todo to a handler
// goroutine: a new one while fewer than Concurrency run, else through the
// work queue (idle handlers and, with Options.Buffer, todos waiting for
// one). Handler goroutines live for the whole Run: one goroutine per todo
// paid for growing a fresh stack every time, a tenth of a busy worker's CPU.
// Only claimLoop calls it.
func (w *Worker) dispatch(base context.Context, r *run, wg *sync.WaitGroup, todo *queuev1.Todo, expires time.Time) {
	l := r.hb.add(todo, expires)
	if r.handlers < w.opts.Concurrency {
		r.handlers++
		wg.Go(func() {
			for l, ok := l, true; ok; l, ok = <-r.work {
				w.handle(base, r, l)
			}
		})
		return
	}
	r.work <- l // never blocks: the claims ask for at most the free capacity
}

// handle processes one todo and gives its slot back exactly once: as soon
// as process says the slot is free (a completion is queued), or at the end.
func (w *Worker) handle(base context.Context, r *run, l *lease) {
	freed := false
	free := func() {
		if !freed {
			freed = true
			r.freed <- struct{}{}
		}
	}
	defer free()
	w.process(base, r, l, free)
}

// claimedUntil is when the lease of todo, claimed by res, ends.
func (w *Worker) claimedUntil(res claimResult, todo *queuev1.Todo) time.Time {
	return leaseEnd(res.start, res.end, todo.GetLeaseExpiresAt(), time.Duration(w.opts.LeaseSeconds)*time.Second)
}

// claim asks for n todos. It waits for a ready connection (a node that is
// down or restarting is not an error while another may come up) within the
// call's deadline.
func (w *Worker) claim(ctx context.Context, n int, wait time.Duration) ([]*queuev1.Todo, error) {
	ctx, cancel := context.WithTimeout(ctx, wait+claimSlack)
	defer cancel()
	resp, err := w.client.Claim(ctx, &queuev1.ClaimRequest{
		Queue:        w.queue,
		WorkerId:     w.opts.WorkerID,
		MaxTodos:     int32(n),
		LeaseSeconds: w.opts.LeaseSeconds,
		Wait:         durationpb.New(wait),
	}, grpc.WaitForReady(true))
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
