//go:build integration

package queue_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// TestTenantIsolation: tenant A cannot see or touch tenant B's todos, even
// with B's ids and lease tokens in hand, and the database is unchanged.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	b := newEnv(t) // the victim
	ids := b.enqueue(t, "shared-name", 3)
	running := b.claimOne(t, "shared-name")
	dead := b.kill(t, "shared-name")
	keyed, err := b.srv.Enqueue(b.owner(t), &queuev1.EnqueueRequest{Queue: "shared-name", DedupeKey: "k"})
	require.NoError(t, err)

	aHuman := seedHuman(t, b.pool)
	aAgent := seedAgent(t, b.pool, aHuman, "intruder")
	aOwner, aWorker := asHuman(t, aHuman), asAgent(t, aHuman, aAgent)
	before := b.snapshot(t)

	for _, id := range ids {
		_, err := b.srv.GetTodo(aOwner, &queuev1.GetTodoRequest{Id: id})
		require.Equal(t, codes.NotFound, code(err))
		_, err = b.srv.Cancel(aOwner, &queuev1.CancelRequest{Id: id})
		require.Equal(t, codes.NotFound, code(err))
	}
	tok := running.GetLeaseToken()
	_, err = b.srv.Heartbeat(aWorker, &queuev1.HeartbeatRequest{Id: running.GetId(), LeaseToken: tok})
	require.Equal(t, codes.NotFound, code(err))
	_, err = b.srv.Complete(aWorker, &queuev1.CompleteRequest{Id: running.GetId(), LeaseToken: tok})
	require.Equal(t, codes.NotFound, code(err))
	_, err = b.srv.Fail(aWorker, &queuev1.FailRequest{Id: running.GetId(), LeaseToken: tok, Error: "x"})
	require.Equal(t, codes.NotFound, code(err))
	_, err = b.srv.Release(aWorker, &queuev1.ReleaseRequest{Id: running.GetId(), LeaseToken: tok})
	require.Equal(t, codes.NotFound, code(err))
	cb, err := b.srv.CompleteBatch(aWorker, &queuev1.CompleteBatchRequest{Items: []*queuev1.CompleteRequest{{Id: running.GetId(), LeaseToken: tok}}})
	require.NoError(t, err)
	require.Equal(t, queuev1.BatchOutcome_BATCH_OUTCOME_NOT_FOUND, cb.GetResults()[0].GetOutcome())

	// Same queue name, other tenant: nothing to claim, list, count or redrive.
	cl, err := b.srv.Claim(aWorker, &queuev1.ClaimRequest{Queue: "shared-name", WorkerId: "a", MaxTodos: 100})
	require.NoError(t, err)
	require.Empty(t, cl.GetTodos())
	ls, err := b.srv.ListTodos(aOwner, &queuev1.ListTodosRequest{})
	require.NoError(t, err)
	require.Empty(t, ls.GetTodos())
	st, err := b.srv.QueueStats(aOwner, &queuev1.QueueStatsRequest{Queue: "shared-name"})
	require.NoError(t, err)
	require.Zero(t, st.GetPendingReady()+st.GetRunning()+st.GetDead())
	rd, err := b.srv.Redrive(aOwner, &queuev1.RedriveRequest{Queue: "shared-name", Ids: []int64{dead}})
	require.NoError(t, err)
	require.Zero(t, rd.GetRedrivenCount())
	rd, err = b.srv.Redrive(aOwner, &queuev1.RedriveRequest{Queue: "shared-name"})
	require.NoError(t, err)
	require.Zero(t, rd.GetRedrivenCount())
	// A dedupe key is per tenant: A's enqueue of B's key is A's own new todo.
	mine, err := b.srv.Enqueue(aOwner, &queuev1.EnqueueRequest{Queue: "shared-name", DedupeKey: "k"})
	require.NoError(t, err)
	require.False(t, mine.GetDuplicate())
	require.NotEqual(t, keyed.GetTodo().GetId(), mine.GetTodo().GetId())
	_, err = b.pool.Exec(t.Context(), `DELETE FROM todos WHERE human_id = $1`, aHuman)
	require.NoError(t, err)

	require.Equal(t, before, b.snapshot(t), "tenant B's todos are exactly as they were")
}

// TestAgentScope: an agent credential reaches todos addressed to it or to
// no agent, never another agent's, even within its own tenant.
func TestAgentScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := seedAgent(t, e.pool, e.human, "other")
	mine, err := e.srv.Enqueue(e.owner(t), &queuev1.EnqueueRequest{Queue: "q", AgentId: e.agent.String()})
	require.NoError(t, err)
	theirs, err := e.srv.Enqueue(e.owner(t), &queuev1.EnqueueRequest{Queue: "q", AgentId: other.String()})
	require.NoError(t, err)
	shared := e.enqueue(t, "q", 1)[0]

	got := e.claim(t, "q", 10)
	ids := []int64{}
	for _, td := range got {
		ids = append(ids, td.GetId())
	}
	require.ElementsMatch(t, []int64{mine.GetTodo().GetId(), shared}, ids)
	_, err = e.srv.GetTodo(e.worker(t), &queuev1.GetTodoRequest{Id: theirs.GetTodo().GetId()})
	require.Equal(t, codes.NotFound, code(err))

	// The other agent gets its own.
	res, err := e.srv.Claim(asAgent(t, e.human, other), &queuev1.ClaimRequest{Queue: "q", WorkerId: "o", MaxTodos: 10})
	require.NoError(t, err)
	require.Len(t, res.GetTodos(), 1)
	require.Equal(t, theirs.GetTodo().GetId(), res.GetTodos()[0].GetId())
	// The human (owner) sees all three.
	ls, err := e.srv.ListTodos(e.owner(t), &queuev1.ListTodosRequest{Queue: "q"})
	require.NoError(t, err)
	require.Len(t, ls.GetTodos(), 3)
}
