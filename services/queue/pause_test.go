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
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/pgnotify"
	"github.com/switchboard/switchboard/services/queue"
)

// secondNode starts e's components and a second queue server on e's
// database with a notifier of its own (a node's), so a change on one reaches
// the other's waiting claims only through pg_notify.
func secondNode(t *testing.T, e *env, o queue.Options) *queue.Server {
	t.Helper()
	shared := pgnotify.New(zap.NewNop(), e.pool, pgnotify.Options{})
	o.Notifier = shared
	other := queue.New(zap.NewNop(), e.pool, o)
	require.NoError(t, shared.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, shared.Stop(context.Background())) })
	for _, s := range []*queue.Server{e.srv, other} {
		for _, c := range s.Components() {
			require.NoError(t, c.Start(t.Context()))
			t.Cleanup(func() { require.NoError(t, c.Stop(context.Background())) })
		}
	}
	return other
}

// TestPauseStopsClaims: claimers racing on two nodes get nothing from any
// claim that starts after PauseQueue returned; the todo running at the
// pause completes; enqueue still works; QueueStats shows the pause; pausing
// again changes nothing; resume hands the work out again.
func TestPauseStopsClaims(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := secondNode(t, e, queue.Options{})
	e.enqueue(t, "q", 10000) // far more than the claimers can take before the pause lands
	running := e.claimOne(t, "q")

	var paused atomic.Bool
	var afterPause, claimedAfterPause atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		srv := []*queue.Server{e.srv, other}[i%2]
		wg.Go(func() {
			for afterPause.Load() < 200 {
				started := paused.Load()
				res, err := srv.Claim(e.worker(t), &queuev1.ClaimRequest{Queue: "q", WorkerId: "racer", MaxTodos: 5})
				if !assertNoError(t, err) {
					return
				}
				if started {
					afterPause.Add(1)
					claimedAfterPause.Add(int64(len(res.GetTodos())))
				}
			}
		})
	}
	require.Eventually(t, func() bool { return e.count(t, `SELECT count(*) FROM todos WHERE state = 'running'`) > 50 },
		longWait, time.Millisecond, "the claimers are claiming")
	res, err := e.srv.PauseQueue(e.owner(t), &queuev1.PauseQueueRequest{Queue: "q"})
	require.NoError(t, err)
	paused.Store(true)
	wg.Wait()
	require.True(t, res.GetControl().GetPaused())
	require.NotNil(t, res.GetControl().GetPausedAt())
	require.Zero(t, claimedAfterPause.Load(), "no claim that started after the pause got a todo")
	require.Positive(t, e.count(t, `SELECT count(*) FROM todos WHERE state = 'pending'`), "work was left to claim")

	_, err = e.srv.Complete(e.worker(t), &queuev1.CompleteRequest{Id: running.GetId(), LeaseToken: running.GetLeaseToken()})
	require.NoError(t, err, "a todo running at the pause finishes normally")
	require.Equal(t, queuev1.TodoState_TODO_STATE_COMPLETED, e.get(t, running.GetId()).GetState())
	_, err = other.Enqueue(e.owner(t), &queuev1.EnqueueRequest{Queue: "q", Kind: "while-paused"})
	require.NoError(t, err, "enqueue works while paused")

	st, err := e.srv.QueueStats(e.owner(t), &queuev1.QueueStatsRequest{Queue: "q"})
	require.NoError(t, err)
	require.True(t, st.GetPaused())
	require.Equal(t, res.GetControl().GetPausedAt().AsTime(), st.GetPausedAt().AsTime())

	again, err := other.PauseQueue(e.owner(t), &queuev1.PauseQueueRequest{Queue: "q"})
	require.NoError(t, err, "pausing a paused queue is not an error")
	require.True(t, again.GetControl().GetPaused())
	require.Equal(t, res.GetControl().GetPausedAt().AsTime(), again.GetControl().GetPausedAt().AsTime(), "the first pause's time stays")

	resumed, err := e.srv.ResumeQueue(e.owner(t), &queuev1.ResumeQueueRequest{Queue: "q"})
	require.NoError(t, err)
	require.False(t, resumed.GetControl().GetPaused())
	require.Nil(t, resumed.GetControl().GetPausedAt())
	require.Len(t, e.claim(t, "q", 3), 3, "resumed: claims hand out work again")
	resumedAgain, err := other.ResumeQueue(e.owner(t), &queuev1.ResumeQueueRequest{Queue: "q"})
	require.NoError(t, err, "resuming a running queue is not an error")
	require.False(t, resumedAgain.GetControl().GetPaused())
	st, err = e.srv.QueueStats(e.owner(t), &queuev1.QueueStatsRequest{Queue: "q"})
	require.NoError(t, err)
	require.False(t, st.GetPaused())
}

// TestPausedLongPollWaitsAndResumeWakesIt: a long-polling Claim on a paused
// queue neither returns nor spins when work arrives (it re-checks once per
// wake-up), and ResumeQueue wakes it: a waiter on the resuming node at once,
// a waiter on another node through pg_notify. Polling is once a minute, so
// only the wake-ups can return these claims in time.
func TestPausedLongPollWaitsAndResumeWakesIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, queue.Options{PollInterval: time.Minute})
	other := secondNode(t, e, queue.Options{PollInterval: time.Minute})
	var attempts atomic.Int64
	queue.OnClaimAttempt(e.srv, func() { attempts.Add(1) })
	_, err := e.srv.PauseQueue(e.owner(t), &queuev1.PauseQueueRequest{Queue: "q"})
	require.NoError(t, err)

	// Both nodes' listen connections are up before anyone waits, so their
	// connect-time wake-all cannot add an attempt below.
	require.Eventually(t, func() bool {
		return e.count(t, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'`) == 2
	}, longWait, time.Millisecond)

	local := claimAsync(t, e.worker(t), e.srv, "q")
	remote := claimAsync(t, e.worker(t), other, "q")
	// The waiter subscribes before its first attempt: wait for that attempt.
	require.Eventually(t, func() bool { return attempts.Load() == 1 }, longWait, time.Millisecond, "one attempt before waiting")
	// Enqueued on the other node: its one pg_notify wakes the local waiter
	// once, and it finds the queue paused.
	_, err = other.EnqueueBatch(e.owner(t), &queuev1.EnqueueBatchRequest{Queue: "q", Requests: []*queuev1.EnqueueRequest{{}, {}}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return attempts.Load() == 2 }, longWait, time.Millisecond)
	require.Eventually(t, func() bool { return e.srv.Waiting() == 1 }, longWait, time.Millisecond, "waiting again")
	select {
	case r := <-local:
		t.Fatalf("a claim on a paused queue returned: %v %v", r.res, r.err)
	default:
	}
	require.Equal(t, int64(2), attempts.Load(), "no further attempt without a wake-up: no busy loop")

	_, err = e.srv.ResumeQueue(e.owner(t), &queuev1.ResumeQueueRequest{Queue: "q"})
	require.NoError(t, err)
	for name, done := range map[string]<-chan claimResult{"local": local, "remote": remote} {
		r := <-done
		require.NoError(t, r.err, name)
		require.Less(t, r.elapsed, longWait, name)
		require.Len(t, r.res.GetTodos(), 1, name)
	}
}

// TestPauseIsTenantScoped: a pause acts on the caller's queue only, and
// another tenant neither sees it nor is stopped by it.
func TestPauseIsTenantScoped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	otherHuman := seedHuman(t, e.pool)
	otherAgent := seedAgent(t, e.pool, otherHuman, "w")
	e.enqueue(t, "q", 1)
	_, err := e.srv.Enqueue(asHuman(t, otherHuman), &queuev1.EnqueueRequest{Queue: "q"})
	require.NoError(t, err)

	_, err = e.srv.PauseQueue(asHuman(t, otherHuman), &queuev1.PauseQueueRequest{Queue: "q"})
	require.NoError(t, err)
	st, err := e.srv.QueueStats(e.owner(t), &queuev1.QueueStatsRequest{Queue: "q"})
	require.NoError(t, err)
	require.False(t, st.GetPaused(), "the other tenant's pause is not ours")
	e.claimOne(t, "q") // and does not stop our claims
	res, err := e.srv.Claim(asAgent(t, otherHuman, otherAgent), &queuev1.ClaimRequest{Queue: "q", WorkerId: "w"})
	require.NoError(t, err)
	require.Empty(t, res.GetTodos(), "the pausing tenant's own queue is paused")

	mine, err := e.srv.ListQueues(e.owner(t), &queuev1.ListQueuesRequest{})
	require.NoError(t, err)
	require.Len(t, mine.GetQueues(), 1)
	require.False(t, mine.GetQueues()[0].GetPaused())
	require.EqualValues(t, 1, mine.GetQueues()[0].GetRunning(), "our counts only")
	theirs, err := e.srv.ListQueues(asHuman(t, otherHuman), &queuev1.ListQueuesRequest{})
	require.NoError(t, err)
	require.Len(t, theirs.GetQueues(), 1)
	require.True(t, theirs.GetQueues()[0].GetPaused())
	require.EqualValues(t, 1, theirs.GetQueues()[0].GetPendingReady())
}

// TestQueueControlBadInput: each bad field is INVALID_ARGUMENT naming it.
func TestQueueControlBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.owner(t)
	check := func(name, field string, err error) {
		t.Helper()
		require.Equal(t, codes.InvalidArgument, code(err), name)
		require.Equal(t, field, violatedField(t, err), name)
	}
	for _, q := range []string{"", "Bad Name", "-leading-dash", string(make([]byte, 64))} {
		_, err := e.srv.PauseQueue(ctx, &queuev1.PauseQueueRequest{Queue: q})
		check("pause "+q, "queue", err)
		_, err = e.srv.ResumeQueue(ctx, &queuev1.ResumeQueueRequest{Queue: q})
		check("resume "+q, "queue", err)
	}
	for name, req := range map[string]*queuev1.ListQueuesRequest{
		"page_size 101":      {PageSize: 101},
		"negative page_size": {PageSize: -1},
	} {
		_, err := e.srv.ListQueues(ctx, req)
		check(name, "page_size", err)
	}
	for _, tok := range []string{"not base64!", "eyJhIjoiQmFkIE5hbWUifQ"} { // the second: {"a":"Bad Name"}
		_, err := e.srv.ListQueues(ctx, &queuev1.ListQueuesRequest{PageToken: tok})
		check("page_token "+tok, "page_token", err)
	}
	require.Zero(t, e.count(t, `SELECT count(*) FROM queue_controls`), "nothing was written")
}

// violatedField is the field an INVALID_ARGUMENT names.
func violatedField(t *testing.T, err error) string {
	t.Helper()
	st, _ := apierr.ToStatus(err)
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 {
			return br.GetFieldViolations()[0].GetField()
		}
	}
	t.Fatalf("no field violation in %v", err)
	return ""
}

// TestListQueues: every queue of the tenant — with todos in any state, or
// only a control row — by name, with depth by state and pause flag, in
// pages.
func TestListQueues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.enqueue(t, "alpha", 2)
	e.enqueue(t, "beta", 2)
	td := e.claimOne(t, "beta")
	_, err := e.srv.Complete(e.worker(t), &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()})
	require.NoError(t, err)
	e.claimOne(t, "beta")
	_, err = e.srv.PauseQueue(e.owner(t), &queuev1.PauseQueueRequest{Queue: "gamma"}) // no todos, only a control
	require.NoError(t, err)
	_, err = e.srv.PauseQueue(e.owner(t), &queuev1.PauseQueueRequest{Queue: "alpha"})
	require.NoError(t, err)

	first, err := e.srv.ListQueues(e.worker(t), &queuev1.ListQueuesRequest{PageSize: 2})
	require.NoError(t, err)
	require.Len(t, first.GetQueues(), 2)
	require.NotEmpty(t, first.GetNextPageToken())
	a, b := first.GetQueues()[0], first.GetQueues()[1]
	require.Equal(t, "alpha", a.GetQueue())
	require.True(t, a.GetPaused())
	require.EqualValues(t, 2, a.GetPendingReady())
	require.Equal(t, "beta", b.GetQueue())
	require.False(t, b.GetPaused())
	require.EqualValues(t, 1, b.GetRunning())
	require.EqualValues(t, 1, b.GetCompleted())
	require.Zero(t, b.GetPendingReady())

	rest, err := e.srv.ListQueues(e.worker(t), &queuev1.ListQueuesRequest{PageSize: 2, PageToken: first.GetNextPageToken()})
	require.NoError(t, err)
	require.Len(t, rest.GetQueues(), 1)
	require.Empty(t, rest.GetNextPageToken(), "the last page")
	require.Equal(t, "gamma", rest.GetQueues()[0].GetQueue())
	require.True(t, rest.GetQueues()[0].GetPaused())
	require.Zero(t, rest.GetQueues()[0].GetPendingReady())

	all, err := e.srv.ListQueues(e.owner(t), &queuev1.ListQueuesRequest{})
	require.NoError(t, err)
	require.Len(t, all.GetQueues(), 3)
	require.Empty(t, all.GetNextPageToken())
}

// TestQueueLifecycleEvents: queue.paused and queue.resumed are emitted once
// per change, not for a pause or resume that changed nothing.
func TestQueueLifecycleEvents(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var events []queue.TodoEvent
	e := newEnv(t, queue.Options{OnChange: func(ev queue.TodoEvent) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev)
	}})
	for range 2 {
		_, err := e.srv.PauseQueue(e.owner(t), &queuev1.PauseQueueRequest{Queue: "q"})
		require.NoError(t, err)
	}
	for range 2 {
		_, err := e.srv.ResumeQueue(e.owner(t), &queuev1.ResumeQueueRequest{Queue: "q"})
		require.NoError(t, err)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, events, 2)
	require.Equal(t, queue.EventPaused, events[0].Kind)
	require.Equal(t, queue.EventResumed, events[1].Kind)
	for _, ev := range events {
		require.True(t, ev.Kind.QueueLevel())
		require.Equal(t, "q", ev.Queue)
		require.Equal(t, e.human, ev.HumanID)
		require.Zero(t, ev.TodoID)
	}
	require.Equal(t, "paused", events[0].State)
	require.Equal(t, "running", events[1].State)
}
