//go:build integration

package queue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/pgnotify"
	"github.com/switchboard/switchboard/services/queue"
)

// longWait is far longer than any of these tests may take: a Claim that
// returns before it did so because work arrived, not because it timed out.
// It is the contract's maximum wait: a claim returns as soon as its work
// arrives, so only a broken wake-up ever waits it out, and a machine stalled
// for 20 s under a saturated CI run once made a correct claim look broken.
const longWait = 60 * time.Second

type claimResult struct {
	res     *queuev1.ClaimResponse
	err     error
	elapsed time.Duration
}

// claimAsync starts a long-poll Claim and returns its result channel once
// the claim is waiting (so the work the test adds next must wake it).
func claimAsync(t *testing.T, ctx context.Context, srv *queue.Server, q string) <-chan claimResult {
	t.Helper()
	before := srv.Waiting()
	out := make(chan claimResult, 1)
	go func() {
		start := time.Now()
		res, err := srv.Claim(ctx, &queuev1.ClaimRequest{Queue: q, WorkerId: "waiter", Wait: durationpb.New(longWait)})
		out <- claimResult{res: res, err: err, elapsed: time.Since(start)}
	}()
	require.Eventually(t, func() bool { return srv.Waiting() > before }, longWait, time.Millisecond)
	return out
}

func TestLongPollWokenByLocalEnqueue(t *testing.T) {
	t.Parallel()
	// Polling every minute: only the in-process wake-up can return in time.
	e := newEnv(t, queue.Options{PollInterval: time.Minute})
	done := claimAsync(t, e.worker(t), e.srv, "q")
	id := e.enqueue(t, "q", 1)[0]
	r := <-done
	require.NoError(t, r.err)
	require.Less(t, r.elapsed, longWait, "returned when work arrived, not at the deadline")
	require.Len(t, r.res.GetTodos(), 1)
	require.Equal(t, id, r.res.GetTodos()[0].GetId())
}

func TestLongPollWokenByOtherNode(t *testing.T) {
	t.Parallel()
	e := newEnv(t, queue.Options{PollInterval: time.Minute})
	// A second node on the same database: its enqueue reaches e's waiter only
	// through pg_notify and e's listen connection. e runs its private
	// notifier; other shares its node's, which the node runs first.
	shared := pgnotify.New(zap.NewNop(), e.pool, pgnotify.Options{})
	other := queue.New(zap.NewNop(), e.pool, queue.Options{PollInterval: time.Minute, Notifier: shared})
	require.NoError(t, shared.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, shared.Stop(context.Background())) })
	for _, s := range []*queue.Server{e.srv, other} {
		for _, c := range s.Components() {
			require.NoError(t, c.Start(t.Context()))
			t.Cleanup(func() { require.NoError(t, c.Stop(context.Background())) })
		}
	}
	done := claimAsync(t, e.worker(t), e.srv, "q")
	_, err := other.Enqueue(e.owner(t), &queuev1.EnqueueRequest{Queue: "q"})
	require.NoError(t, err)
	r := <-done
	require.NoError(t, r.err)
	require.Less(t, r.elapsed, longWait)
	require.Len(t, r.res.GetTodos(), 1)
}

func TestLongPollFallsBackToPolling(t *testing.T) {
	t.Parallel()
	// No components run (no notifier) and the todo is made due by a
	// plain UPDATE that wakes nobody: only the poll tick can find it.
	e := newEnv(t, queue.Options{PollInterval: 50 * time.Millisecond})
	res, err := e.srv.Enqueue(e.owner(t), &queuev1.EnqueueRequest{Queue: "q", RunAt: nil, MaxAttempts: 1, Kind: "later"})
	require.NoError(t, err)
	_, err = e.pool.Exec(t.Context(), `UPDATE todos SET run_at = now() + interval '1 hour' WHERE id = $1`, res.GetTodo().GetId())
	require.NoError(t, err)
	done := claimAsync(t, e.worker(t), e.srv, "q")
	e.makeDue(t, res.GetTodo().GetId())
	r := <-done
	require.NoError(t, r.err)
	require.Less(t, r.elapsed, longWait)
	require.Len(t, r.res.GetTodos(), 1)
}

func TestLongPollReturnsEmptyOnShutdown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	wake := component(t, e.srv, queue.Name+"-wake")
	require.NoError(t, wake.Start(t.Context()))
	done := claimAsync(t, e.worker(t), e.srv, "q")
	require.NoError(t, wake.Stop(t.Context()))
	r := <-done
	require.NoError(t, r.err)
	require.Empty(t, r.res.GetTodos())
	require.Less(t, r.elapsed, longWait)
}

func TestClaimBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.worker(t)
	for name, req := range map[string]*queuev1.ClaimRequest{
		"empty queue":        {WorkerId: "w"},
		"no worker":          {Queue: "q"},
		"max_todos 1001":     {Queue: "q", WorkerId: "w", MaxTodos: 1001},
		"negative max_todos": {Queue: "q", WorkerId: "w", MaxTodos: -1},
		"lease 3601":         {Queue: "q", WorkerId: "w", LeaseSeconds: 3601},
		"wait 61s":           {Queue: "q", WorkerId: "w", Wait: durationpb.New(61 * time.Second)},
	} {
		_, err := e.srv.Claim(ctx, req)
		require.Equal(t, codes.InvalidArgument, code(err), name)
	}
	_, err := e.srv.Heartbeat(ctx, &queuev1.HeartbeatRequest{Id: 1})
	require.Equal(t, codes.InvalidArgument, code(err), "missing lease token")
}

func TestLongPollRespectsCallerDeadline(t *testing.T) {
	t.Parallel()
	// No poll ticks: no claim statement can be in flight when the margin
	// before the deadline is reached, however slow the machine.
	e := newEnv(t, queue.Options{PollInterval: time.Hour})
	ctx, cancel := context.WithTimeout(e.worker(t), 5*time.Second)
	defer cancel()
	res, err := e.srv.Claim(ctx, &queuev1.ClaimRequest{Queue: "q", WorkerId: "w", Wait: durationpb.New(longWait)})
	require.NoError(t, err, "empty-handed before the deadline, not DEADLINE_EXCEEDED")
	require.Empty(t, res.GetTodos())
}

func TestOnChangeHook(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var events []queue.TodoEvent
	e := newEnv(t, queue.Options{OnChange: func(ev queue.TodoEvent) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev)
	}})
	ids := e.enqueue(t, "q", 2)
	single, batched := e.claimOne(t, "q"), e.claimOne(t, "q")
	_, err := e.srv.Complete(e.worker(t), &queuev1.CompleteRequest{Id: single.GetId(), LeaseToken: single.GetLeaseToken()})
	require.NoError(t, err)
	_, err = e.srv.CompleteBatch(e.worker(t), &queuev1.CompleteBatchRequest{Items: []*queuev1.CompleteRequest{
		{Id: batched.GetId(), LeaseToken: batched.GetLeaseToken()},
	}})
	require.NoError(t, err)

	mu.Lock()
	defer mu.Unlock()
	var kinds []queue.EventKind
	for _, ev := range events {
		kinds = append(kinds, ev.Kind)
		require.Equal(t, "q", ev.Queue)
		require.NotZero(t, ev.HumanID)
		require.Contains(t, ids, ev.TodoID)
	}
	require.Equal(t, []queue.EventKind{
		queue.EventEnqueued, queue.EventEnqueued, queue.EventClaimed, queue.EventClaimed,
		queue.EventCompleted, queue.EventCompleted,
	}, kinds)
	require.Equal(t, single.GetId(), events[4].TodoID)
	require.Equal(t, batched.GetId(), events[5].TodoID)
	require.Equal(t, "completed", events[4].State)
	require.Equal(t, "completed", events[5].State)
}

// TestLongPollWakesOneWaiterPerTodo: wake-ups are targeted (one waiter per
// new todo), and still every waiter gets its todo promptly.
func TestLongPollWakesOneWaiterPerTodo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, queue.Options{PollInterval: time.Minute})
	const n = 5
	var results []<-chan claimResult
	for range n {
		results = append(results, claimAsync(t, e.worker(t), e.srv, "q"))
	}
	for range n {
		e.enqueue(t, "q", 1)
	}
	got := map[int64]bool{}
	for _, ch := range results {
		r := <-ch
		require.NoError(t, r.err)
		require.Less(t, r.elapsed, longWait)
		require.Len(t, r.res.GetTodos(), 1)
		got[r.res.GetTodos()[0].GetId()] = true
	}
	require.Len(t, got, n, "each waiter got a different todo")
}

// TestLongPollLeftWaiterAbsorbsNothing: a waiter whose caller gave up no
// longer takes targeted wake-ups, so the remaining waiter gets the todo
// without waiting for a poll tick.
func TestLongPollLeftWaiterAbsorbsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, queue.Options{PollInterval: time.Minute})
	leaving, leave := context.WithCancel(e.worker(t))
	gone := claimAsync(t, leaving, e.srv, "q")
	stays := claimAsync(t, e.worker(t), e.srv, "q")
	leave()
	require.Equal(t, codes.Canceled, code((<-gone).err))
	e.enqueue(t, "q", 1)
	r := <-stays
	require.NoError(t, r.err)
	require.Len(t, r.res.GetTodos(), 1)
}
