//go:build integration

package queue_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/services/queue"
)

// A todo waiting out a backoff becomes due at once, and the claim waiting
// on its queue is woken in-process (polling every minute, only the wake-up
// returns in time), with todo.retried emitted once.
func TestRetryTodoWakesWaitingClaim(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var kinds []queue.EventKind
	e := newEnv(t, queue.Options{PollInterval: time.Minute, OnChange: func(ev queue.TodoEvent) {
		mu.Lock()
		defer mu.Unlock()
		kinds = append(kinds, ev.Kind)
	}})
	id := e.enqueue(t, "q", 1)[0]
	td := e.claimOne(t, "q")
	_, err := e.srv.Fail(e.worker(t), &queuev1.FailRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken(), Error: "boom", RetryAfter: durationpb.New(time.Hour)})
	require.NoError(t, err)
	require.Empty(t, e.claim(t, "q", 1), "waiting out its backoff")

	done := claimAsync(t, e.worker(t), e.srv, "q")
	res, err := e.srv.RetryTodo(e.owner(t), &queuev1.RetryTodoRequest{Id: id})
	require.NoError(t, err)
	require.Equal(t, queuev1.TodoState_TODO_STATE_PENDING, res.GetTodo().GetState())
	require.False(t, res.GetTodo().GetRunAt().AsTime().After(e.dbNow(t)), "due now")
	r := <-done
	require.NoError(t, r.err)
	require.Less(t, r.elapsed, longWait, "woken by the retry, not at the deadline")
	require.Len(t, r.res.GetTodos(), 1)
	require.Equal(t, id, r.res.GetTodos()[0].GetId())

	mu.Lock()
	defer mu.Unlock()
	require.Contains(t, kinds, queue.EventRetried)
}

// Retrying a pending todo that is already due changes nothing and emits
// nothing; every other state is FAILED_PRECONDITION; unknown and other
// tenants' todos are NOT_FOUND.
func TestRetryTodoStates(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	retried := 0
	e := newEnv(t, queue.Options{OnChange: func(ev queue.TodoEvent) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Kind == queue.EventRetried {
			retried++
		}
	}})
	ctx := e.owner(t)

	due := e.enqueue(t, "q", 1)[0]
	before := e.snapshot(t)
	res, err := e.srv.RetryTodo(ctx, &queuev1.RetryTodoRequest{Id: due})
	require.NoError(t, err)
	require.Equal(t, due, res.GetTodo().GetId())
	require.Equal(t, before, e.snapshot(t), "an already due todo is left as it is")

	later, err := e.srv.Enqueue(ctx, &queuev1.EnqueueRequest{Queue: "s", RunAt: timestamppb.New(time.Now().Add(time.Hour))})
	require.NoError(t, err)
	_, err = e.srv.RetryTodo(ctx, &queuev1.RetryTodoRequest{Id: later.GetTodo().GetId()})
	require.NoError(t, err)
	again := e.snapshot(t)
	_, err = e.srv.RetryTodo(ctx, &queuev1.RetryTodoRequest{Id: later.GetTodo().GetId()})
	require.NoError(t, err, "idempotent")
	require.Equal(t, again, e.snapshot(t))
	mu.Lock()
	require.Equal(t, 1, retried, "only the call that changed the todo emits todo.retried")
	mu.Unlock()

	running := e.claimOne(t, "q")
	e.enqueue(t, "d", 1)
	dead := e.kill(t, "d")
	cancelled := e.enqueue(t, "c", 1)[0]
	_, err = e.srv.Cancel(ctx, &queuev1.CancelRequest{Id: cancelled})
	require.NoError(t, err)
	completedTodo := e.enqueue(t, "x", 1)[0]
	ct := e.claimOne(t, "x")
	require.Equal(t, completedTodo, ct.GetId())
	_, err = e.srv.Complete(e.worker(t), &queuev1.CompleteRequest{Id: ct.GetId(), LeaseToken: ct.GetLeaseToken()})
	require.NoError(t, err)

	for name, id := range map[string]int64{"running": running.GetId(), "dead": dead, "cancelled": cancelled, "completed": completedTodo} {
		_, err := e.srv.RetryTodo(ctx, &queuev1.RetryTodoRequest{Id: id})
		require.Equal(t, codes.FailedPrecondition, code(err), name)
		require.ErrorContains(t, err, name, "the message names the state")
	}
	_, err = e.srv.RetryTodo(ctx, &queuev1.RetryTodoRequest{Id: dead})
	require.ErrorContains(t, err, "Redrive")
	// Redrive takes dead todos only: a cancelled one is not sent there.
	_, err = e.srv.RetryTodo(ctx, &queuev1.RetryTodoRequest{Id: cancelled})
	require.ErrorContains(t, err, "enqueue a new one")
	require.NotContains(t, err.Error(), "Redrive")

	_, err = e.srv.RetryTodo(ctx, &queuev1.RetryTodoRequest{Id: 999999})
	require.Equal(t, codes.NotFound, code(err))
	other := seedHuman(t, e.pool)
	_, err = e.srv.RetryTodo(asHuman(t, other), &queuev1.RetryTodoRequest{Id: later.GetTodo().GetId()})
	require.Equal(t, codes.NotFound, code(err), "another tenant's todo")
	_, err = e.srv.RetryTodo(ctx, &queuev1.RetryTodoRequest{})
	require.Equal(t, codes.InvalidArgument, code(err))
}
