package metrics_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/pkg/metrics"
)

// BenchmarkQueueTransition is what one todo transition costs the hot path:
// the queue's series looked up (a known queue) and one counter increased.
func BenchmarkQueueTransition(b *testing.B) {
	r := metrics.New(metrics.Options{})
	tenant := uuid.New()
	r.Queue.For(tenant, "jobs")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Queue.For(tenant, "jobs").Completed.Inc()
		}
	})
}
