package queue_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/queue"
)

// BenchmarkDrain measures in-process claim+complete throughput (no gRPC, no
// auth): b.N todos drained by benchWorkers workers that claim and batch-complete 100
// at a time. Run:
//
//	go test -run '^$' -bench Drain -benchtime 50000x ./services/queue/
func BenchmarkDrain(b *testing.B) {
	pool := pgtest.NewPool(b)
	srv := queue.New(zap.NewNop(), pool)
	human := seedHuman(b, pool)
	agent := seedAgent(b, pool, human, "bench")
	owner, worker := asHuman(b, human), asAgent(b, human, agent)
	for i := 0; i < b.N; i += 1000 {
		_, err := srv.EnqueueBatch(owner, &queuev1.EnqueueBatchRequest{Queue: "bench", Requests: make([]*queuev1.EnqueueRequest, min(1000, b.N-i))})
		require.NoError(b, err)
	}
	b.ResetTimer()
	var wg sync.WaitGroup
	for range benchWorkers {
		wg.Go(func() {
			for {
				res, err := srv.Claim(worker, &queuev1.ClaimRequest{Queue: "bench", WorkerId: "b", MaxTodos: 100})
				if err != nil || len(res.GetTodos()) == 0 {
					return
				}
				items := make([]*queuev1.CompleteRequest, len(res.GetTodos()))
				for i, td := range res.GetTodos() {
					items[i] = &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetAttempt()}
				}
				if _, err := srv.CompleteBatch(worker, &queuev1.CompleteBatchRequest{Items: items}); err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "todos/s")
}

// benchWorkers is the number of concurrent claimers in BenchmarkDrain.
const benchWorkers = 4
