package sources

import (
	"testing"
	"time"
)

// BenchmarkFilterBudget is what one delivery's filters cost when they use
// the whole budget, for the kinds of work that cost the most time per unit
// (20 routes each; the time limit off, so the budget stops them): ns/op is
// the budget's worst case in time on this machine.
//
//	cd services && go test -run '^$' -bench FilterBudget ./ingest/sources/
func BenchmarkFilterBudget(b *testing.B) {
	for _, tc := range []struct{ name, src string }{
		{"nested-all", numbers(100) + `.all(x, ` + numbers(30) + `.all(y, x + y >= 0))`},
		{"filter", numbers(130) + `.all(x, ` + numbers(20) + `.filter(y, y > 100).size() == 0)`},
		{"exists_one", numbers(620) + `.exists_one(x, x == 100)`},
		{"long-all", numbers(900) + `.all(x, x >= 0)`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srcs := make([]string, 20)
			for i := range srcs {
				srcs[i] = tc.src
			}
			set, err := CompileFilters(srcs, 1024)
			if err != nil {
				b.Fatal(err)
			}
			set.SetTimeLimit(time.Hour)
			var spent uint64
			for b.Loop() {
				run := set.Start(smallVars())
				for i := range srcs {
					_, _ = run.Eval(i)
				}
				spent = run.Spent()
				run.Done()
			}
			b.ReportMetric(float64(spent), "units/op")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(max(spent, 1)), "ns/unit")
		})
	}
}
