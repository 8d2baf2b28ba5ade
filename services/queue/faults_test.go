//go:build integration

package queue_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/queue"
)

// TestAcksAreIdempotent: an ack retried with the token of a lease that
// already reached that outcome (its first answer was lost) answers success
// and already = true, changes nothing and emits nothing; a different
// outcome, or the token of an older lease, stays FAILED_PRECONDITION.
func TestAcksAreIdempotent(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	kinds := map[queue.EventKind]int{}
	e := newEnv(t, queue.Options{OnChange: func(ev queue.TodoEvent) {
		mu.Lock()
		defer mu.Unlock()
		kinds[ev.Kind]++
	}})
	w := e.worker(t)
	e.enqueue(t, "q", 4)
	done, batched, failed, released := e.claimOne(t, "q"), e.claimOne(t, "q"), e.claimOne(t, "q"), e.claimOne(t, "q")

	first, err := e.srv.Complete(w, &queuev1.CompleteRequest{Id: done.GetId(), LeaseToken: done.GetLeaseToken()})
	require.NoError(t, err)
	require.False(t, first.GetAlready())
	before := e.snapshot(t)
	again, err := e.srv.Complete(w, &queuev1.CompleteRequest{Id: done.GetId(), LeaseToken: done.GetLeaseToken()})
	require.NoError(t, err)
	require.True(t, again.GetAlready())
	require.Equal(t, before, e.snapshot(t), "a retried completion changes nothing")
	require.Equal(t, queuev1.TodoState_TODO_STATE_COMPLETED, again.GetTodo().GetState())
	require.Equal(t, first.GetTodo().GetFinishedAt().AsTime(), again.GetTodo().GetFinishedAt().AsTime())
	require.Zero(t, again.GetTodo().GetLeaseToken(), "only a claim answer carries the token")

	items := []*queuev1.CompleteRequest{{Id: batched.GetId(), LeaseToken: batched.GetLeaseToken()}}
	cb, err := e.srv.CompleteBatch(w, &queuev1.CompleteBatchRequest{Items: items})
	require.NoError(t, err)
	require.Equal(t, queuev1.BatchOutcome_BATCH_OUTCOME_OK, cb.GetResults()[0].GetOutcome())
	cb, err = e.srv.CompleteBatch(w, &queuev1.CompleteBatchRequest{Items: append(items,
		&queuev1.CompleteRequest{Id: done.GetId(), LeaseToken: done.GetLeaseToken()},
		&queuev1.CompleteRequest{Id: failed.GetId(), LeaseToken: failed.GetLeaseToken() ^ 1})})
	require.NoError(t, err)
	require.Equal(t, []queuev1.BatchOutcome{
		queuev1.BatchOutcome_BATCH_OUTCOME_ALREADY, queuev1.BatchOutcome_BATCH_OUTCOME_ALREADY, queuev1.BatchOutcome_BATCH_OUTCOME_STALE_LEASE,
	}, outcomes(cb))

	fr := &queuev1.FailRequest{Id: failed.GetId(), LeaseToken: failed.GetLeaseToken(), Error: "boom", RetryAfter: durationpb.New(0)}
	f1, err := e.srv.Fail(w, fr)
	require.NoError(t, err)
	require.False(t, f1.GetAlready())
	f2, err := e.srv.Fail(w, fr)
	require.NoError(t, err)
	require.True(t, f2.GetAlready())
	require.Len(t, f2.GetTodo().GetErrors(), 1, "the retried Fail recorded nothing more")

	rr := &queuev1.ReleaseRequest{Id: released.GetId(), LeaseToken: released.GetLeaseToken()}
	_, err = e.srv.Release(w, rr)
	require.NoError(t, err)
	r2, err := e.srv.Release(w, rr)
	require.NoError(t, err)
	require.True(t, r2.GetAlready())
	require.Equal(t, released.GetMaxAttempts()+1, r2.GetTodo().GetMaxAttempts(), "released once: one extra attempt, not two")

	// A different outcome for an ended lease is stale, and so is a heartbeat.
	_, err = e.srv.Fail(w, &queuev1.FailRequest{Id: done.GetId(), LeaseToken: done.GetLeaseToken(), Error: "x"})
	require.Equal(t, codes.FailedPrecondition, code(err))
	_, err = e.srv.Complete(w, &queuev1.CompleteRequest{Id: failed.GetId(), LeaseToken: failed.GetLeaseToken()})
	require.Equal(t, codes.FailedPrecondition, code(err))
	_, err = e.srv.Heartbeat(w, &queuev1.HeartbeatRequest{Id: done.GetId(), LeaseToken: done.GetLeaseToken()})
	require.Equal(t, codes.FailedPrecondition, code(err))

	// Once the todo is claimed again, the old lease's retries are stale.
	require.Len(t, e.claim(t, "q", 2), 2, "the failed and the released todo")
	_, err = e.srv.Fail(w, fr)
	require.Equal(t, codes.FailedPrecondition, code(err))
	_, err = e.srv.Release(w, rr)
	require.Equal(t, codes.FailedPrecondition, code(err))

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 2, kinds[queue.EventCompleted], "a retried completion emits nothing")
	require.Equal(t, 1, kinds[queue.EventFailed])
	require.Equal(t, 1, kinds[queue.EventReleased])
}

func outcomes(r *queuev1.CompleteBatchResponse) []queuev1.BatchOutcome {
	var out []queuev1.BatchOutcome
	for _, x := range r.GetResults() {
		out = append(out, x.GetOutcome())
	}
	return out
}

// TestLeaseTokensCannotBeGuessed: the token is not the attempt number, no
// read but the claim reveals it, and another agent of the same tenant that
// sends the attempt number (or any guess) changes nothing.
func TestLeaseTokensCannotBeGuessed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := asAgent(t, e.human, seedAgent(t, e.pool, e.human, "other"))
	e.enqueue(t, "q", 20)
	claimed := e.claim(t, "q", 20)
	require.Len(t, claimed, 20)
	seen := map[int64]bool{}
	for _, td := range claimed {
		require.Positive(t, td.GetLeaseToken())
		require.NotEqualValues(t, td.GetAttempt(), td.GetLeaseToken())
		seen[td.GetLeaseToken()] = true
	}
	require.Len(t, seen, 20, "a token per claim")

	td := claimed[0]
	before := e.snapshot(t)
	for _, guess := range []int64{1, 2, int64(td.GetAttempt()), td.GetLeaseToken() + 1} {
		_, err := e.srv.Complete(other, &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: guess})
		require.Equal(t, codes.FailedPrecondition, code(err), "guess %d", guess)
	}
	require.Equal(t, before, e.snapshot(t))

	got, err := e.srv.GetTodo(e.owner(t), &queuev1.GetTodoRequest{Id: td.GetId()})
	require.NoError(t, err)
	require.Zero(t, got.GetTodo().GetLeaseToken())
	ls, err := e.srv.ListTodos(e.owner(t), &queuev1.ListTodosRequest{Queue: "q"})
	require.NoError(t, err)
	for _, x := range ls.GetTodos() {
		require.Zero(t, x.GetLeaseToken())
	}
	_, err = e.srv.Complete(e.worker(t), &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()})
	require.NoError(t, err, "the holder still can")
}

// TestOverlappingDedupeBatchesDoNotDeadlock: three clients with four calls
// in flight each enqueue batches of the same 100 new dedupe keys, each in
// its own shuffled order, all at once, ten times over. Every call succeeds
// and every key is stored once.
func TestOverlappingDedupeBatchesDoNotDeadlock(t *testing.T) {
	t.Parallel()
	e := newEnv(t, queue.Options{})
	big := pgtest.OpenPool(t, e.url, func(c *pgxpool.Config) { c.MaxConns = 12 })
	srv := queue.New(zap.NewNop(), big, queue.Options{})
	const rounds, callers, keys = 10, 12, 100
	for round := range rounds {
		start := make(chan struct{})
		var g errgroup.Group
		for caller := range callers {
			order := rand.New(rand.NewPCG(uint64(round), uint64(caller))).Perm(keys) //nolint:gosec // test order
			g.Go(func() error {
				reqs := make([]*queuev1.EnqueueRequest, keys)
				for i, k := range order {
					reqs[i] = &queuev1.EnqueueRequest{DedupeKey: fmt.Sprintf("r%d-k%03d", round, k)}
				}
				<-start
				_, err := srv.EnqueueBatch(e.owner(t), &queuev1.EnqueueBatchRequest{Queue: "dd", Requests: reqs})
				return err
			})
		}
		close(start)
		require.NoError(t, g.Wait(), "round %d", round)
	}
	require.EqualValues(t, rounds*keys, e.count(t, `SELECT count(DISTINCT dedupe_key) FROM todos WHERE queue = 'dd'`))
	require.EqualValues(t, rounds*keys, e.count(t, `SELECT count(*) FROM todos WHERE queue = 'dd'`))
}

// TestUndeliverableTodoIsDeadLettered: a todo whose stored payload cannot be
// delivered (nested past the read limit, written around the API) is
// dead-lettered with the reason by the claim that meets it; the todos
// claimed with it are delivered, and listings still show it.
func TestUndeliverableTodoIsDeadLettered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.enqueue(t, "q", 3)
	deep := `{"a":` + strings.Repeat(`[`, 3333) + strings.Repeat(`]`, 3333) + `}`
	_, err := e.pool.Exec(t.Context(), `UPDATE todos SET payload = $1::jsonb WHERE id = $2`, deep, ids[1])
	require.NoError(t, err)

	res, err := e.srv.Claim(e.worker(t), &queuev1.ClaimRequest{Queue: "q", WorkerId: "w1", MaxTodos: 3})
	require.NoError(t, err)
	require.Len(t, res.GetTodos(), 2)
	require.Equal(t, []int64{ids[0], ids[2]}, []int64{res.GetTodos()[0].GetId(), res.GetTodos()[1].GetId()})

	poison := e.get(t, ids[1])
	require.Equal(t, queuev1.TodoState_TODO_STATE_DEAD, poison.GetState())
	require.Contains(t, poison.GetLastError(), "cannot be delivered")
	require.Nil(t, poison.GetPayload(), "rendered without the payload it cannot deliver")
	ls, err := e.srv.ListTodos(e.owner(t), &queuev1.ListTodosRequest{Queue: "q"})
	require.NoError(t, err)
	require.Len(t, ls.GetTodos(), 3, "one undeliverable row does not fail the listing")
	for _, td := range res.GetTodos() {
		_, err := e.srv.Complete(e.worker(t), &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()})
		require.NoError(t, err)
	}
}
