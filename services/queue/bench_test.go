//go:build integration

package queue_test

import (
	"context"
	"sync"
	"sync/atomic"
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
//	go test -tags integration -run '^$' -bench Drain -benchtime 50000x ./services/queue/
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
					items[i] = &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()}
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

// BenchmarkDrainSingles is BenchmarkDrain through the group commit: each
// claimed todo is completed by its own single-item Complete call, 100 at a
// time per worker, which the running Complete merger folds into batch
// statements. Run:
//
//	go test -tags integration -run '^$' -bench DrainSingles -benchtime 20000x ./services/queue/
func BenchmarkDrainSingles(b *testing.B) {
	pool := pgtest.NewPool(b)
	srv := queue.New(zap.NewNop(), pool)
	var stmts atomic.Int64
	queue.OnMergedStatement(srv, func(int) { stmts.Add(1) })
	for _, c := range srv.Components() {
		require.NoError(b, c.Start(b.Context()))
		b.Cleanup(func() { require.NoError(b, c.Stop(context.Background())) })
	}
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
				var each sync.WaitGroup
				for _, td := range res.GetTodos() {
					each.Go(func() {
						if _, err := srv.Complete(worker, &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()}); err != nil {
							b.Error(err)
						}
					})
				}
				each.Wait()
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "todos/s")
	b.ReportMetric(float64(b.N)/float64(stmts.Load()), "todos/stmt")
}

// BenchmarkEnqueue measures in-process Enqueue of keyless todos, one per
// call from benchWorkers goroutines ("single") and 1,000 per EnqueueBatch
// ("batch"): the path dedupe scopes must not slow. Run:
//
//	go test -tags integration -run '^$' -bench Enqueue -benchtime 20000x ./services/queue/
func BenchmarkEnqueue(b *testing.B) {
	pool := pgtest.NewPool(b)
	srv := queue.New(zap.NewNop(), pool)
	owner := asHuman(b, seedHuman(b, pool))
	b.Run("single", func(b *testing.B) {
		b.SetParallelism(benchWorkers)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := srv.Enqueue(owner, &queuev1.EnqueueRequest{Queue: "bench", Kind: "k"}); err != nil {
					b.Error(err)
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "todos/s")
	})
	b.Run("batch", func(b *testing.B) {
		reqs := make([]*queuev1.EnqueueRequest, 1000)
		for i := range reqs {
			reqs[i] = &queuev1.EnqueueRequest{Kind: "k"}
		}
		for range b.N {
			_, err := srv.EnqueueBatch(owner, &queuev1.EnqueueBatchRequest{Queue: "bench", Requests: reqs})
			require.NoError(b, err)
		}
		b.ReportMetric(float64(b.N*len(reqs))/b.Elapsed().Seconds(), "todos/s")
	})
}
