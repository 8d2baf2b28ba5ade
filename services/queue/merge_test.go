//go:build integration

package queue_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/services/queue"
)

// startMerging returns a server over e's database whose components run
// (stopped at cleanup), and a counter of the Complete statements it sends.
func startMerging(t *testing.T, e *env, o queue.Options) (*queue.Server, *atomic.Int64) {
	t.Helper()
	s := queue.New(zap.NewNop(), e.pool, o)
	var stmts atomic.Int64
	queue.OnMergedStatement(s, func(int) { stmts.Add(1) })
	for _, c := range s.Components() {
		require.NoError(t, c.Start(t.Context()))
		t.Cleanup(func() { require.NoError(t, c.Stop(context.Background())) })
	}
	return s, &stmts
}

// TestMergedCompletes: 400 concurrent single Completes in one window share
// few statements, and each call gets its own outcome: valid tokens OK, stale
// tokens FAILED_PRECONDITION (also for a todo another call completes in the
// same window), unknown ids and another tenant's todos NOT_FOUND.
func TestMergedCompletes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s, stmts := startMerging(t, e, queue.Options{MergeWindow: 50 * time.Millisecond, MergeMaxItems: 1000})
	e.enqueue(t, "m", 300)
	todos := e.claim(t, "m", 300)
	require.Len(t, todos, 300)
	stranger := asHuman(t, seedHuman(t, e.pool))

	type call struct {
		ctx   context.Context
		req   *queuev1.CompleteRequest
		want  codes.Code
		todos int64 // which todo completes, for the OK ones
	}
	var calls []call
	for i, td := range todos {
		switch i % 3 {
		case 0: // valid
			calls = append(calls, call{e.worker(t), &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()}, codes.OK, td.GetId()})
		case 1: // stale token alone
			calls = append(calls, call{e.worker(t), &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken() + 1}, codes.FailedPrecondition, 0})
		case 2: // a stale and a valid token for the same todo, and a stranger
			calls = append(calls,
				call{e.owner(t), &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken() + 7}, codes.FailedPrecondition, 0},
				call{e.owner(t), &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()}, codes.OK, td.GetId()},
				call{stranger, &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()}, codes.NotFound, 0})
		}
	}
	calls = append(calls, call{e.worker(t), &queuev1.CompleteRequest{Id: 1 << 40, LeaseToken: 1}, codes.NotFound, 0})

	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, c := range calls {
		wg.Go(func() {
			<-start
			res, err := s.Complete(c.ctx, c.req)
			if !assertCode(t, c.want, err) || c.want != codes.OK {
				return
			}
			if res.GetTodo().GetId() != c.todos || res.GetTodo().GetState() != queuev1.TodoState_TODO_STATE_COMPLETED {
				t.Errorf("todo %d: got %v", c.todos, res.GetTodo())
			}
		})
	}
	close(start)
	wg.Wait()
	t.Logf("%d calls, %d statements", len(calls), stmts.Load())
	require.Less(t, stmts.Load(), int64(len(calls)/10), "calls were merged")
	require.EqualValues(t, 200, e.count(t, `SELECT count(*) FROM todos WHERE state = 'completed'`))
	require.EqualValues(t, 100, e.count(t, `SELECT count(*) FROM todos WHERE state = 'running'`))
}

func assertCode(t *testing.T, want codes.Code, err error) bool {
	t.Helper()
	if got := code(err); got != want {
		t.Errorf("want %v, got %v (%v)", want, got, err)
		return false
	}
	return true
}

// TestMergedCancelAndStop: a call whose context ends while it is queued is
// dropped (never sent, the todo stays running); Stop flushes what is queued
// at once, however long the window.
func TestMergedCancelAndStop(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := queue.New(zap.NewNop(), e.pool, queue.Options{MergeWindow: time.Hour})
	var stmts atomic.Int64
	queue.OnMergedStatement(s, func(int) { stmts.Add(1) })
	for _, c := range s.Components() {
		require.NoError(t, c.Start(t.Context()))
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		for _, c := range s.Components() {
			require.NoError(t, c.Stop(context.Background()))
		}
	}
	t.Cleanup(stop)
	e.enqueue(t, "m", 2)
	todos := e.claim(t, "m", 2)
	require.Len(t, todos, 2)

	ctx, cancel := context.WithTimeout(e.worker(t), 50*time.Millisecond)
	defer cancel()
	_, err := s.Complete(ctx, &queuev1.CompleteRequest{Id: todos[0].GetId(), LeaseToken: todos[0].GetLeaseToken()})
	require.ErrorIs(t, err, context.DeadlineExceeded)

	done := make(chan error, 1)
	go func() {
		_, err := s.Complete(e.worker(t), &queuev1.CompleteRequest{Id: todos[1].GetId(), LeaseToken: todos[1].GetLeaseToken()})
		done <- err
	}()
	require.Never(t, func() bool { return len(done) > 0 }, 100*time.Millisecond, 5*time.Millisecond, "held by the window")
	stop()
	require.NoError(t, <-done)
	require.EqualValues(t, 1, stmts.Load(), "only the live call was sent")
	require.Equal(t, queuev1.TodoState_TODO_STATE_RUNNING, e.get(t, todos[0].GetId()).GetState())
	require.Equal(t, queuev1.TodoState_TODO_STATE_COMPLETED, e.get(t, todos[1].GetId()).GetState())

	// After Stop, calls run on their own.
	_, err = s.Complete(e.worker(t), &queuev1.CompleteRequest{Id: todos[0].GetId(), LeaseToken: todos[0].GetLeaseToken()})
	require.NoError(t, err)
}

// TestMergedHeartbeats: concurrent Heartbeats merge too, with the outcomes
// of single calls; a zero window (negative option) works.
func TestMergedHeartbeats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, w := range []time.Duration{-1, 20 * time.Millisecond} {
		s, _ := startMerging(t, e, queue.Options{MergeWindow: w})
		e.enqueue(t, "h", 50)
		todos := e.claim(t, "h", 50)
		require.Len(t, todos, 50)
		var wg sync.WaitGroup
		for i, td := range todos {
			wg.Go(func() {
				tok, want := td.GetLeaseToken(), codes.OK
				if i%2 == 1 {
					tok, want = tok+1, codes.FailedPrecondition
				}
				res, err := s.Heartbeat(e.worker(t), &queuev1.HeartbeatRequest{Id: td.GetId(), LeaseToken: tok, LeaseSeconds: 600})
				if assertCode(t, want, err) && want == codes.OK && time.Until(res.GetLeaseExpiresAt().AsTime()) < 5*time.Minute {
					t.Errorf("lease of %d not extended: %v", td.GetId(), res.GetLeaseExpiresAt().AsTime())
				}
			})
		}
		wg.Wait()
		for _, td := range todos {
			_, err := e.srv.Complete(e.worker(t), &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()})
			require.NoError(t, err)
		}
	}
}
