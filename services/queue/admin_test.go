//go:build integration

package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/auth"
)

// kill dead-letters todo id (claims it and fails it with dead_letter).
func (e *env) kill(t *testing.T, q string) int64 {
	t.Helper()
	td := e.claimOne(t, q)
	_, err := e.srv.Fail(e.worker(t), &queuev1.FailRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken(), Error: "dead", DeadLetter: true})
	require.NoError(t, err)
	return td.GetId()
}

func TestRedrive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.owner(t)
	e.enqueue(t, "q", 5)
	dead := make([]int64, 5)
	for i := range dead {
		dead[i] = e.kill(t, "q")
	}
	live := e.enqueue(t, "q", 1)[0]

	// By ids: only dead todos of this queue move; others are skipped.
	res, err := e.srv.Redrive(ctx, &queuev1.RedriveRequest{Queue: "q", Ids: []int64{dead[0], live, 999999}})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.GetRedrivenCount())
	td := e.get(t, dead[0])
	require.Equal(t, queuev1.TodoState_TODO_STATE_PENDING, td.GetState())
	require.EqualValues(t, 1, td.GetAttempt(), "the token keeps counting")
	require.EqualValues(t, 26, td.GetMaxAttempts(), "a fresh budget: attempt + max_attempts")
	require.Nil(t, td.GetFinishedAt())
	require.Len(t, td.GetErrors(), 1, "history is kept")

	// Another queue's name skips them.
	res, err = e.srv.Redrive(ctx, &queuev1.RedriveRequest{Queue: "other", Ids: dead[1:]})
	require.NoError(t, err)
	require.Zero(t, res.GetRedrivenCount())

	// By queue with a limit, then the rest.
	res, err = e.srv.Redrive(ctx, &queuev1.RedriveRequest{Queue: "q", Limit: 3})
	require.NoError(t, err)
	require.EqualValues(t, 3, res.GetRedrivenCount())
	res, err = e.srv.Redrive(ctx, &queuev1.RedriveRequest{Queue: "q"})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.GetRedrivenCount())
	require.Zero(t, e.count(t, `SELECT count(*) FROM todos WHERE state = 'dead'`))

	// Redriven todos are claimable with fresh tokens.
	todos := e.claim(t, "q", 10)
	require.Len(t, todos, 6)

	_, err = e.srv.Redrive(ctx, &queuev1.RedriveRequest{})
	require.Equal(t, codes.InvalidArgument, code(err))
}

func TestCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.owner(t)
	ids := e.enqueue(t, "q", 2)
	c, err := e.srv.Cancel(ctx, &queuev1.CancelRequest{Id: ids[0], Reason: "not needed"})
	require.NoError(t, err)
	require.Equal(t, queuev1.TodoState_TODO_STATE_CANCELLED, c.GetTodo().GetState())
	require.Equal(t, "not needed", c.GetTodo().GetLastError())
	require.NotNil(t, c.GetTodo().GetFinishedAt())

	// A running todo: its worker learns from FAILED_PRECONDITION.
	td := e.claimOne(t, "q")
	require.Equal(t, ids[1], td.GetId())
	_, err = e.srv.Cancel(ctx, &queuev1.CancelRequest{Id: ids[1]})
	require.NoError(t, err)
	require.Equal(t, allCodes(codes.FailedPrecondition), staleCalls(t, e, ids[1], td.GetLeaseToken()))

	_, err = e.srv.Cancel(ctx, &queuev1.CancelRequest{Id: ids[1]})
	require.Equal(t, codes.FailedPrecondition, code(err), "already cancelled")
	_, err = e.srv.Cancel(ctx, &queuev1.CancelRequest{Id: 123456})
	require.Equal(t, codes.NotFound, code(err))
	_, err = e.srv.GetTodo(ctx, &queuev1.GetTodoRequest{Id: 123456})
	require.Equal(t, codes.NotFound, code(err))
}

func TestListTodosPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.owner(t)
	ids := e.enqueue(t, "q", 25)
	e.enqueue(t, "other", 5)
	var got []int64
	tok := ""
	for {
		res, err := e.srv.ListTodos(ctx, &queuev1.ListTodosRequest{Queue: "q", PageSize: 10, PageToken: tok})
		require.NoError(t, err)
		for _, td := range res.GetTodos() {
			got = append(got, td.GetId())
		}
		if tok = res.GetNextPageToken(); tok == "" {
			break
		}
		_, err = e.srv.ListTodos(ctx, &queuev1.ListTodosRequest{Queue: "other", PageToken: tok})
		require.Equal(t, codes.InvalidArgument, code(err), "a token is bound to its filters")
	}
	require.Len(t, got, 25)
	for i := range got {
		require.Equal(t, ids[len(ids)-1-i], got[i], "newest first")
	}

	e.claim(t, "q", 4)
	res, err := e.srv.ListTodos(ctx, &queuev1.ListTodosRequest{State: queuev1.TodoState_TODO_STATE_RUNNING})
	require.NoError(t, err)
	require.Len(t, res.GetTodos(), 4)

	_, err = e.srv.ListTodos(ctx, &queuev1.ListTodosRequest{PageToken: "garbage"})
	require.Equal(t, codes.InvalidArgument, code(err))
	_, err = e.srv.ListTodos(ctx, &queuev1.ListTodosRequest{PageSize: 5000})
	require.Equal(t, codes.InvalidArgument, code(err))
}

func TestQueueStats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.owner(t)
	ids := e.enqueue(t, "q", 6)
	e.claim(t, "q", 1) // running: ids[0]
	td := e.claimOne(t, "q")
	_, err := e.srv.Complete(e.worker(t), &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()})
	require.NoError(t, err)
	e.kill(t, "q")
	_, err = e.srv.Cancel(ctx, &queuev1.CancelRequest{Id: ids[5]})
	require.NoError(t, err)
	td = e.claimOne(t, "q")
	_, err = e.srv.Fail(e.worker(t), &queuev1.FailRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken(), Error: "x", RetryAfter: durationpb.New(3600e9)})
	require.NoError(t, err)
	_, err = e.pool.Exec(t.Context(), `UPDATE todos SET run_at = now() - interval '90 seconds' WHERE id = $1`, ids[4])
	require.NoError(t, err)

	st, err := e.srv.QueueStats(ctx, &queuev1.QueueStatsRequest{Queue: "q"})
	require.NoError(t, err)
	require.EqualValues(t, 1, st.GetPendingReady())
	require.EqualValues(t, 1, st.GetPendingScheduled())
	require.EqualValues(t, 1, st.GetRunning())
	require.EqualValues(t, 1, st.GetCompleted())
	require.EqualValues(t, 1, st.GetDead())
	require.EqualValues(t, 1, st.GetCancelled())
	require.GreaterOrEqual(t, st.GetOldestPendingAgeSeconds(), 89.0)
	require.Nil(t, st.GetVacuum(), "the table-wide figures are not a tenant's")

	empty, err := e.srv.QueueStats(ctx, &queuev1.QueueStatsRequest{Queue: "nothing-here"})
	require.NoError(t, err)
	require.Zero(t, empty.GetPendingReady()+empty.GetRunning()+empty.GetDead())
}

// TestQueueStatsVacuumIsForAdministrators: the todos table's tuple counts
// and vacuum times are every tenant's together, so a tenant's credentials
// (its admin, a reader) get the queue's own counts only; an administrator's
// gets the table's health too.
func TestQueueStatsVacuumIsForAdministrators(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.enqueue(t, "q", 3)
	reader := auth.NewContext(t.Context(), auth.Principal{CredentialID: uuid.New(), HumanID: e.human, Scopes: []auth.Scope{auth.ScopeRead}})
	for name, ctx := range map[string]context.Context{"tenant admin": e.owner(t), "reader": reader} {
		st, err := e.srv.QueueStats(ctx, &queuev1.QueueStatsRequest{Queue: "q"})
		require.NoError(t, err, name)
		require.EqualValues(t, 3, st.GetPendingReady(), name)
		require.Nil(t, st.GetVacuum(), "%s must not see the table-wide figures", name)
	}

	operator := auth.NewContext(t.Context(), auth.Principal{
		CredentialID: uuid.New(), HumanID: seedHuman(t, e.pool), Scopes: []auth.Scope{auth.ScopeAdmin}, Administrator: true,
	})
	st, err := e.srv.QueueStats(operator, &queuev1.QueueStatsRequest{Queue: "q"})
	require.NoError(t, err)
	require.Zero(t, st.GetPendingReady(), "an administrator's own tenant has no todos in q")
	require.NotNil(t, st.GetVacuum(), "an administrator sees the table's health")
	require.Eventually(t, func() bool {
		st, err := e.srv.QueueStats(operator, &queuev1.QueueStatsRequest{Queue: "q"})
		return err == nil && st.GetVacuum().GetLiveTuples() >= 3
	}, 10*time.Second, 50*time.Millisecond, "the table's live tuples (statistics are flushed within a second)")
}
