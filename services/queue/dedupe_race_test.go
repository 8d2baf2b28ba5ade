//go:build integration

package queue_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/durationpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/queue"
)

// TestDedupeScopesRaceAcrossNodes: three queue.Servers on separate pools
// ("nodes") enqueue batches that name the same keys in every scope, each
// batch in its own random order. Exactly one todo per (scope space, key) is
// created, every other entry is answered with it, and no call fails (the
// inserts take keys in one order, so they wait instead of deadlocking).
func TestDedupeScopesRaceAcrossNodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := make([]*queue.Server, 3)
	for i := range nodes {
		pool := pgtest.OpenPool(t, e.url, func(c *pgxpool.Config) { c.MaxConns = 4 })
		nodes[i] = queue.New(zap.NewNop(), pool, queue.Options{})
	}
	const keys, callers = 8, 12
	var base []*queuev1.EnqueueRequest
	for k := range keys {
		key := fmt.Sprintf("k%d", k)
		base = append(base,
			&queuev1.EnqueueRequest{DedupeKey: key, DedupeScope: retention},
			&queuev1.EnqueueRequest{DedupeKey: "live-" + key, DedupeScope: live},
			&queuev1.EnqueueRequest{DedupeKey: key, DedupeScope: window, DedupeWindow: durationpb.New(time.Hour)},
		)
	}
	type answer struct {
		space string
		id    int64
		dup   bool
	}
	answers := make([][]answer, callers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			reqs := make([]*queuev1.EnqueueRequest, len(base))
			for i, p := range rand.Perm(len(base)) {
				reqs[i] = base[p]
			}
			<-start
			res, err := nodes[c%len(nodes)].EnqueueBatch(e.owner(t), &queuev1.EnqueueBatchRequest{Queue: "q", Requests: reqs})
			if !assertNoError(t, err) {
				return
			}
			for i, r := range res.GetResponses() {
				space := reqs[i].GetDedupeScope().String() + "/" + reqs[i].GetDedupeKey()
				answers[c] = append(answers[c], answer{space: space, id: r.GetTodo().GetId(), dup: r.GetDuplicate()})
			}
		})
	}
	close(start)
	wg.Wait()

	created := map[string]int{}
	ids := map[string]int64{}
	for _, as := range answers {
		require.Len(t, as, len(base))
		for _, a := range as {
			if id, ok := ids[a.space]; ok {
				require.Equal(t, id, a.id, a.space)
			}
			ids[a.space] = a.id
			if !a.dup {
				created[a.space]++
			}
		}
	}
	require.Len(t, ids, len(base))
	for space := range ids {
		require.Equal(t, 1, created[space], "exactly one caller created %s", space)
	}
	require.EqualValues(t, len(base), e.count(t, `SELECT count(*) FROM todos`))
	require.EqualValues(t, keys, e.count(t, `SELECT count(*) FROM todo_dedupe_windows AS w JOIN todos AS t ON t.id = w.todo_id`))
}

// TestDedupeLiveChurn: three nodes keep enqueueing one LIVE key while a
// worker claims and completes whoever holds it. Every call succeeds (a
// holder that finishes between the insert and its lookup makes the enqueue
// run again, not fail), every answer is the key's holder at that moment or a
// new todo, and the key is never held twice.
func TestDedupeLiveChurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := make([]*queue.Server, 3)
	for i := range nodes {
		pool := pgtest.OpenPool(t, e.url, func(c *pgxpool.Config) { c.MaxConns = 2 })
		nodes[i] = queue.New(zap.NewNop(), pool, queue.Options{})
	}
	const rounds = 60
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				_, err := n.Enqueue(e.owner(t), &queuev1.EnqueueRequest{Queue: "q", DedupeKey: "k", DedupeScope: live})
				if !assertNoError(t, err) {
					return
				}
				var held int64
				err = e.pool.QueryRow(t.Context(), `SELECT count(*) FROM todos WHERE state IN ('pending', 'running')`).Scan(&held)
				if !assertNoError(t, err) || !assert.LessOrEqual(t, held, int64(1), "the key is held once") {
					return
				}
			}
		})
	}
	for range rounds {
		var todos []*queuev1.Todo
		require.Eventually(t, func() bool { todos = e.claim(t, "q", 10); return len(todos) > 0 }, 30*time.Second, time.Millisecond)
		require.Len(t, todos, 1, "one live holder at a time")
		_, err := e.srv.Complete(e.worker(t), &queuev1.CompleteRequest{Id: todos[0].GetId(), LeaseToken: todos[0].GetLeaseToken()})
		require.NoError(t, err)
	}
	close(done)
	wg.Wait()
	require.GreaterOrEqual(t, e.count(t, `SELECT count(*) FROM todos WHERE state = 'completed'`), int64(rounds))
}
