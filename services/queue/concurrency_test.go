//go:build integration

package queue_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/services/queue"
)

// TestConcurrentWorkersCompleteEachTodoOnce: 8 workers drain 4000 todos in
// batches. Every todo is completed exactly once (counted in the database
// and by successful Complete calls), none is lost, and no todo is ever held
// by two live leases (every claim of an id is its only one: leases do not
// expire during the test, so a second claim would be a double delivery).
func TestConcurrentWorkersCompleteEachTodoOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	concurrentWorkers(t, e, e.srv)
}

// TestConcurrentWorkersMerged: the same with the components running, so the
// single Completes go through the merger.
func TestConcurrentWorkersMerged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s, stmts := startMerging(t, e, queue.Options{})
	concurrentWorkers(t, e, s)
	t.Logf("%d merged statements", stmts.Load())
}

func concurrentWorkers(t *testing.T, e *env, srv *queue.Server) {
	t.Helper()
	const workers, perWorker = 8, 500
	e.enqueue(t, "hot", workers*perWorker)

	var claimed sync.Map // id → worker
	var completed, doubles atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			ctx := e.worker(t)
			for {
				res, err := srv.Claim(ctx, &queuev1.ClaimRequest{Queue: "hot", WorkerId: "w", MaxTodos: 25, LeaseSeconds: 600})
				if !assertNoError(t, err) || len(res.GetTodos()) == 0 {
					return
				}
				items := make([]*queuev1.CompleteRequest, 0, len(res.GetTodos()))
				for _, td := range res.GetTodos() {
					if _, dup := claimed.LoadOrStore(td.GetId(), w); dup {
						doubles.Add(1)
					}
					items = append(items, &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()})
				}
				// Alternate single and batch completes: both paths under load.
				if w%2 == 0 {
					cb, err := srv.CompleteBatch(ctx, &queuev1.CompleteBatchRequest{Items: items})
					if !assertNoError(t, err) {
						return
					}
					for _, r := range cb.GetResults() {
						if r.GetOutcome() == queuev1.BatchOutcome_BATCH_OUTCOME_OK {
							completed.Add(1)
						}
					}
					continue
				}
				for _, it := range items {
					if _, err := srv.Complete(ctx, it); assertNoError(t, err) {
						completed.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	require.Zero(t, doubles.Load(), "no todo was claimed twice")
	require.EqualValues(t, workers*perWorker, completed.Load())
	require.EqualValues(t, workers*perWorker, e.count(t, `SELECT count(*) FROM todos WHERE state = 'completed' AND attempt = 1`))
	require.Zero(t, e.count(t, `SELECT count(*) FROM todos WHERE state <> 'completed'`))
}

// assertNoError reports err without stopping a worker goroutine abruptly
// (require.FailNow must not be called off the test goroutine).
func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Errorf("unexpected error: %v", err)
		return false
	}
	return true
}
