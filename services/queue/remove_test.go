//go:build integration

package queue_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/services/queue"
)

// TestRemoveOnCompleteDeletesTheTodo: a todo enqueued with
// remove_on_complete is deleted by its completion, through CompleteBatch and
// through Complete (whose answer is still the completed todo), next to a
// kept todo in the same batch; each completion is published; afterwards the
// todo is NOT_FOUND to GetTodo and to a retried completion, left out of
// QueueStats, and its dedupe key is free again.
func TestRemoveOnCompleteDeletesTheTodo(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	completed := map[int64]string{}
	e := newEnv(t, queue.Options{OnChange: func(ev queue.TodoEvent) {
		if ev.Kind == queue.EventCompleted {
			mu.Lock()
			completed[ev.TodoID] = ev.State
			mu.Unlock()
		}
	}})
	res, err := e.srv.EnqueueBatch(e.owner(t), &queuev1.EnqueueBatchRequest{Queue: "rm", Requests: []*queuev1.EnqueueRequest{
		{Kind: "a", RemoveOnComplete: true, DedupeKey: "key-a"},
		{Kind: "b", RemoveOnComplete: true},
		{Kind: "c"},
	}})
	require.NoError(t, err)
	byKind := map[string]*queuev1.Todo{}
	for _, r := range res.GetResponses() {
		byKind[r.GetTodo().GetKind()] = r.GetTodo()
	}
	require.True(t, byKind["a"].GetRemoveOnComplete())
	require.False(t, byKind["c"].GetRemoveOnComplete())
	for _, td := range e.claim(t, "rm", 3) {
		byKind[td.GetKind()] = td
	}
	a, b, c := byKind["a"], byKind["b"], byKind["c"]

	batch, err := e.srv.CompleteBatch(e.worker(t), &queuev1.CompleteBatchRequest{Items: []*queuev1.CompleteRequest{
		{Id: a.GetId(), LeaseToken: a.GetLeaseToken()}, {Id: c.GetId(), LeaseToken: c.GetLeaseToken()},
	}})
	require.NoError(t, err)
	for _, r := range batch.GetResults() {
		require.Equal(t, queuev1.BatchOutcome_BATCH_OUTCOME_OK, r.GetOutcome(), "todo %d", r.GetId())
	}
	one, err := e.srv.Complete(e.worker(t), &queuev1.CompleteRequest{Id: b.GetId(), LeaseToken: b.GetLeaseToken(), Result: payload(t, map[string]any{"n": 1.0})})
	require.NoError(t, err)
	require.False(t, one.GetAlready())
	require.Equal(t, b.GetId(), one.GetTodo().GetId())
	require.Equal(t, queuev1.TodoState_TODO_STATE_COMPLETED, one.GetTodo().GetState())
	require.Equal(t, map[string]any{"n": 1.0}, one.GetTodo().GetResult().AsMap())
	require.NotNil(t, one.GetTodo().GetFinishedAt())
	require.Empty(t, one.GetTodo().GetLeaseOwner())
	require.Equal(t, "b", one.GetTodo().GetKind(), "the answer is the whole todo")

	require.EqualValues(t, 0, e.count(t, `SELECT count(*) FROM todos WHERE id = ANY($1)`, []int64{a.GetId(), b.GetId()}), "removed")
	require.EqualValues(t, 1, e.count(t, `SELECT count(*) FROM todos WHERE id = $1 AND state = 'completed'`, c.GetId()), "kept")
	mu.Lock()
	require.Equal(t, map[int64]string{a.GetId(): "completed", b.GetId(): "completed", c.GetId(): "completed"}, completed)
	mu.Unlock()

	_, err = e.srv.GetTodo(e.owner(t), &queuev1.GetTodoRequest{Id: b.GetId()})
	require.Equal(t, codes.NotFound, code(err))
	_, err = e.srv.Complete(e.worker(t), &queuev1.CompleteRequest{Id: b.GetId(), LeaseToken: b.GetLeaseToken()})
	require.Equal(t, codes.NotFound, code(err), "a retried Complete of a removed todo: nothing is left to compare with")
	again, err := e.srv.CompleteBatch(e.worker(t), &queuev1.CompleteBatchRequest{Items: []*queuev1.CompleteRequest{{Id: a.GetId(), LeaseToken: a.GetLeaseToken()}}})
	require.NoError(t, err)
	require.Equal(t, queuev1.BatchOutcome_BATCH_OUTCOME_NOT_FOUND, again.GetResults()[0].GetOutcome())

	stats, err := e.srv.QueueStats(e.owner(t), &queuev1.QueueStatsRequest{Queue: "rm"})
	require.NoError(t, err)
	require.EqualValues(t, 1, stats.GetCompleted(), "only the kept todo")

	dup, err := e.srv.Enqueue(e.owner(t), &queuev1.EnqueueRequest{Queue: "rm", Kind: "a2", DedupeKey: "key-a"})
	require.NoError(t, err)
	require.False(t, dup.GetDuplicate(), "the removed todo's dedupe key is free")
}

// TestRemoveOnCompleteFreesItsLimitSlot: in a queue limited to one running
// todo per key, removing a completed todo gives its key's slot back, as
// completing a kept one does, and the counters equal the recount.
func TestRemoveOnCompleteFreesItsLimitSlot(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.srv.SetQueueLimits(e.owner(t), &queuev1.SetQueueLimitsRequest{Queue: "rml", KeyMaxRunning: 1, MaxRunning: 10})
	require.NoError(t, err)
	for range 2 {
		_, err := e.srv.Enqueue(e.owner(t), &queuev1.EnqueueRequest{Queue: "rml", ConcurrencyKey: "k", RemoveOnComplete: true})
		require.NoError(t, err)
	}
	first := e.claim(t, "rml", 2)
	require.Len(t, first, 1, "one per key")
	require.Empty(t, e.claim(t, "rml", 2), "the key is full")
	_, err = e.srv.CompleteBatch(e.worker(t), &queuev1.CompleteBatchRequest{Items: []*queuev1.CompleteRequest{{Id: first[0].GetId(), LeaseToken: first[0].GetLeaseToken()}}})
	require.NoError(t, err)
	require.Len(t, e.claim(t, "rml", 2), 1, "the removal gave the slot back")
	require.EqualValues(t, 1, e.count(t, `SELECT running FROM queue_keys WHERE queue = 'rml' AND key = 'k'`))
	require.EqualValues(t, 1, e.count(t, `SELECT running FROM queue_controls WHERE queue = 'rml'`))
}

// TestScheduleTemplateRemovesOnComplete: a schedule's template carries
// remove_on_complete to the todos it fires.
func TestScheduleTemplateRemovesOnComplete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.createSchedule(t, &queuev1.CreateScheduleRequest{Name: "rm", Cron: "@every 1h", Template: &queuev1.EnqueueRequest{Queue: "rms", RemoveOnComplete: true}})
	require.True(t, s.GetTemplate().GetRemoveOnComplete())
	e.dueAt(t, s.GetId(), 0)
	n, err := e.srv.TickSchedules(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	td := e.claimOne(t, "rms")
	require.True(t, td.GetRemoveOnComplete())
	_, err = e.srv.Complete(e.worker(t), &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()})
	require.NoError(t, err)
	require.EqualValues(t, 0, e.count(t, `SELECT count(*) FROM todos WHERE queue = 'rms'`))
}
