//go:build integration

package queue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

const (
	live      = queuev1.DedupeScope_DEDUPE_SCOPE_LIVE
	window    = queuev1.DedupeScope_DEDUPE_SCOPE_WINDOW
	retention = queuev1.DedupeScope_DEDUPE_SCOPE_RETENTION
)

// enqueueKey enqueues one todo with key in scope (WINDOW: for w) and returns
// the answer.
func (e *env) enqueueKey(t *testing.T, key string, scope queuev1.DedupeScope, w time.Duration) *queuev1.EnqueueResponse {
	t.Helper()
	req := &queuev1.EnqueueRequest{Queue: "q", DedupeKey: key, DedupeScope: scope}
	if scope == window {
		req.DedupeWindow = durationpb.New(w)
	}
	res, err := e.srv.Enqueue(e.owner(t), req)
	require.NoError(t, err)
	return res
}

// requireDuplicateOf asserts that res is a duplicate answered with holder.
func requireDuplicateOf(t *testing.T, holder int64, res *queuev1.EnqueueResponse, msg string) {
	t.Helper()
	require.True(t, res.GetDuplicate(), msg)
	require.Equal(t, holder, res.GetTodo().GetId(), msg)
}

// TestDedupeLive: a LIVE key refuses duplicates while its todo is pending or
// running (answered with that todo, nothing written), and is free again once
// the todo completed, died or was cancelled. RETENTION and LIVE share the key.
func TestDedupeLive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.enqueueKey(t, "k", live, 0)
	require.False(t, first.GetDuplicate())
	a := first.GetTodo().GetId()
	require.EqualValues(t, 1, e.count(t, `SELECT count(*) FROM todos WHERE id = $1 AND dedupe_scope = 'live'`, a))

	before := e.snapshot(t)
	requireDuplicateOf(t, a, e.enqueueKey(t, "k", live, 0), "pending")
	requireDuplicateOf(t, a, e.enqueueKey(t, "k", retention, 0), "a pending LIVE todo holds the key for RETENTION too")
	require.Equal(t, before, e.snapshot(t), "a duplicate writes nothing")

	run := e.claimOne(t, "q")
	require.Equal(t, a, run.GetId())
	requireDuplicateOf(t, a, e.enqueueKey(t, "k", live, 0), "running")
	_, err := e.srv.Complete(e.worker(t), &queuev1.CompleteRequest{Id: a, LeaseToken: run.GetLeaseToken()})
	require.NoError(t, err)

	second := e.enqueueKey(t, "k", live, 0)
	require.False(t, second.GetDuplicate(), "free after completion")
	b := second.GetTodo().GetId()
	require.NotEqual(t, a, b)
	requireDuplicateOf(t, b, e.enqueueKey(t, "k", live, 0), "the new todo holds it")

	run = e.claimOne(t, "q")
	_, err = e.srv.Fail(e.worker(t), &queuev1.FailRequest{Id: b, LeaseToken: run.GetLeaseToken(), Error: "boom", DeadLetter: true})
	require.NoError(t, err)
	third := e.enqueueKey(t, "k", live, 0)
	require.False(t, third.GetDuplicate(), "free after failure (dead)")

	_, err = e.srv.Cancel(e.owner(t), &queuev1.CancelRequest{Id: third.GetTodo().GetId()})
	require.NoError(t, err)
	fourth := e.enqueueKey(t, "k", live, 0)
	require.False(t, fourth.GetDuplicate(), "free after cancel")
	require.EqualValues(t, 4, e.count(t, `SELECT count(*) FROM todos WHERE dedupe_key = 'k'`))

	// A RETENTION holder keeps the key after it finished, for LIVE too.
	r := e.enqueueKey(t, "r", retention, 0)
	run = e.claimOne(t, "q")
	require.Equal(t, fourth.GetTodo().GetId(), run.GetId(), "the LIVE todo is older")
	run = e.claimOne(t, "q")
	require.Equal(t, r.GetTodo().GetId(), run.GetId())
	_, err = e.srv.Complete(e.worker(t), &queuev1.CompleteRequest{Id: run.GetId(), LeaseToken: run.GetLeaseToken()})
	require.NoError(t, err)
	requireDuplicateOf(t, r.GetTodo().GetId(), e.enqueueKey(t, "r", live, 0), "a finished RETENTION todo still holds")
	requireDuplicateOf(t, r.GetTodo().GetId(), e.enqueueKey(t, "r", retention, 0), "RETENTION unchanged")
}

// TestDedupeWindow: a WINDOW key refuses duplicates, whatever its todo's
// state, until exactly dedupe_window after the first enqueue; then the next
// enqueue takes it. The clock is not waited for: the stored expiry is moved.
func TestDedupeWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.enqueueKey(t, "w", window, time.Hour)
	require.False(t, first.GetDuplicate())
	a := first.GetTodo().GetId()
	require.EqualValues(t, 1, e.count(t, `
		SELECT count(*) FROM todo_dedupe_windows AS w JOIN todos AS t ON t.id = w.todo_id
		WHERE w.key = 'w' AND t.id = $1 AND t.dedupe_scope = 'window' AND w.expires_at = t.created_at + interval '1 hour'`, a),
		"exact: the window ends one hour after the enqueue's transaction")

	before := e.snapshot(t)
	requireDuplicateOf(t, a, e.enqueueKey(t, "w", window, time.Minute), "inside the window")
	require.Equal(t, before, e.snapshot(t), "a duplicate writes nothing")
	other := e.enqueueKey(t, "w", retention, 0)
	require.False(t, other.GetDuplicate(), "WINDOW reservations are apart from the todos' keys")

	run := e.claimOne(t, "q")
	_, err := e.srv.Complete(e.worker(t), &queuev1.CompleteRequest{Id: run.GetId(), LeaseToken: run.GetLeaseToken()})
	require.NoError(t, err)
	requireDuplicateOf(t, a, e.enqueueKey(t, "w", window, time.Hour), "a finished todo's window still holds")

	e.exec(t, `UPDATE todo_dedupe_windows SET expires_at = now() + interval '1 second' WHERE key = 'w'`)
	requireDuplicateOf(t, a, e.enqueueKey(t, "w", window, time.Hour), "one second before the end")
	e.exec(t, `UPDATE todo_dedupe_windows SET expires_at = now() WHERE key = 'w'`)
	second := e.enqueueKey(t, "w", window, 2*time.Hour)
	require.False(t, second.GetDuplicate(), "at the end the key is free")
	b := second.GetTodo().GetId()
	require.EqualValues(t, 1, e.count(t, `SELECT count(*) FROM todo_dedupe_windows WHERE todo_id = $1
		AND expires_at = (SELECT created_at FROM todos WHERE id = $1) + interval '2 hours'`, b))
	requireDuplicateOf(t, b, e.enqueueKey(t, "w", window, time.Hour), "the new window holds")

	// Retention deleting the holder ends its window.
	e.exec(t, `DELETE FROM todos WHERE id = $1`, b)
	third := e.enqueueKey(t, "w", window, time.Hour)
	require.False(t, third.GetDuplicate(), "a window whose todo is gone is taken over")

	// Queue retention deletes expired windows.
	e.exec(t, `UPDATE todo_dedupe_windows SET expires_at = now() - interval '1 second'`)
	_, err = e.srv.PruneOnce(t.Context())
	require.NoError(t, err)
	require.Zero(t, e.count(t, `SELECT count(*) FROM todo_dedupe_windows`))
}

// TestDedupeBatchMixedScopes: one batch with every scope, keyless entries
// and duplicates inside the batch, then the same batch again.
func TestDedupeBatchMixedScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	minute := durationpb.New(time.Minute)
	reqs := []*queuev1.EnqueueRequest{
		{Kind: "0", DedupeKey: "a", DedupeScope: live},
		{Kind: "1", DedupeKey: "a", DedupeScope: live},
		{Kind: "2", DedupeKey: "a"},
		{Kind: "3", DedupeKey: "a", DedupeScope: window, DedupeWindow: minute},
		{Kind: "4", DedupeKey: "a", DedupeScope: window, DedupeWindow: durationpb.New(time.Hour)},
		{Kind: "5"},
		{Kind: "6", DedupeKey: "r", DedupeScope: retention},
		{Kind: "7", DedupeKey: "w", DedupeScope: window, DedupeWindow: minute},
		{Kind: "8"},
		{Kind: "9", DedupeKey: "r"},
	}
	// holder[i] is the entry whose todo entry i gets (i itself: created).
	holder := []int{0, 0, 0, 3, 3, 5, 6, 7, 8, 6}
	res, err := e.srv.EnqueueBatch(e.owner(t), &queuev1.EnqueueBatchRequest{Queue: "q", Requests: reqs})
	require.NoError(t, err)
	got := res.GetResponses()
	require.Len(t, got, len(reqs))
	for i, h := range holder {
		require.Equal(t, h != i, got[i].GetDuplicate(), "entry %d", i)
		require.Equal(t, got[h].GetTodo().GetId(), got[i].GetTodo().GetId(), "entry %d", i)
		require.Equal(t, reqs[h].GetKind(), got[i].GetTodo().GetKind(), "entry %d", i)
	}
	require.EqualValues(t, 6, e.count(t, `SELECT count(*) FROM todos`))
	require.EqualValues(t, 1, e.count(t, `SELECT count(*) FROM todo_dedupe_windows
		WHERE key = 'a' AND todo_id = $1 AND expires_at = (SELECT created_at FROM todos WHERE id = $1) + interval '1 minute'`,
		got[3].GetTodo().GetId()), "the first entry of a key sets its window")

	again, err := e.srv.EnqueueBatch(e.owner(t), &queuev1.EnqueueBatchRequest{Queue: "q", Requests: reqs})
	require.NoError(t, err)
	for i, r := range again.GetResponses() {
		if reqs[i].GetDedupeKey() == "" {
			require.False(t, r.GetDuplicate(), "entry %d", i)
			continue
		}
		requireDuplicateOf(t, got[holder[i]].GetTodo().GetId(), r, "second batch")
	}
	require.EqualValues(t, 8, e.count(t, `SELECT count(*) FROM todos`))
}

// TestDedupeScopeBadInput: dedupe_window is required and bounded for
// WINDOW and forbidden otherwise; LIVE and WINDOW need a key. Each error
// names its field, and nothing is written.
func TestDedupeScopeBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.owner(t)
	before := e.snapshot(t)
	for name, tc := range map[string]struct {
		req   *queuev1.EnqueueRequest
		field string
	}{
		"LIVE without key":      {&queuev1.EnqueueRequest{DedupeScope: live}, "dedupe_key"},
		"WINDOW without window": {&queuev1.EnqueueRequest{DedupeKey: "k", DedupeScope: window}, "dedupe_window"},
		"window for RETENTION":  {&queuev1.EnqueueRequest{DedupeKey: "k", DedupeWindow: durationpb.New(time.Hour)}, "dedupe_window"},
		"window for LIVE": {&queuev1.EnqueueRequest{
			DedupeKey: "k", DedupeScope: live, DedupeWindow: durationpb.New(time.Hour),
		}, "dedupe_window"},
		"window under 1s": {&queuev1.EnqueueRequest{
			DedupeKey: "k", DedupeScope: window, DedupeWindow: durationpb.New(time.Second - 1),
		}, "dedupe_window"},
		"window over 30 days": {&queuev1.EnqueueRequest{
			DedupeKey: "k", DedupeScope: window, DedupeWindow: durationpb.New(30*24*time.Hour + 1),
		}, "dedupe_window"},
		"unknown scope": {&queuev1.EnqueueRequest{DedupeKey: "k", DedupeScope: 9}, "dedupe_scope"},
	} {
		tc.req.Queue = "q"
		_, err := e.srv.Enqueue(ctx, tc.req)
		require.Equal(t, codes.InvalidArgument, code(err), name)
		require.Equal(t, tc.field, violatedField(t, err), name)
	}
	_, err := e.srv.EnqueueBatch(ctx, &queuev1.EnqueueBatchRequest{Queue: "q", Requests: []*queuev1.EnqueueRequest{
		{DedupeKey: "k", DedupeScope: window, DedupeWindow: durationpb.New(time.Minute)},
		{DedupeKey: "k", DedupeScope: window},
	}})
	require.Equal(t, "requests[1].dedupe_window", violatedField(t, err))
	require.Equal(t, before, e.snapshot(t), "bad input writes nothing")
}

// exec runs a statement on the test's database (to move a stored clock).
func (e *env) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := e.pool.Exec(t.Context(), sql, args...)
	require.NoError(t, err)
}
