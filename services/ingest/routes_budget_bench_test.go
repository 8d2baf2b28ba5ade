//go:build integration

package ingest_test

import (
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// numbers is a CEL list literal of n one-digit ints.
func numbers(n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = strconv.Itoa(i % 10)
	}
	return "[" + strings.Join(s, ",") + "]"
}

// Filters the routes table held before issue 31 (the API accepted any
// filter that compiled): a nested loop over literal lists, a regex whose
// program is large (compiled on every call), and a comparison that sizes
// a large body string on every step.
var (
	loopFilter    = numbers(980) + `.all(x, ` + numbers(20) + `.all(y, x + y >= 0))`
	regexFilter   = numbers(30) + `.all(x, !topic.matches('` + strings.Repeat(`[a-z]{1000}`, 40) + `'))`
	bigBodyFilter = numbers(200) + `.all(x, body.s != "b")`
)

// cpuTime is this process's CPU time so far (user and system).
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	require.NoError(tb, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRouteFilterAttack reproduces issue 31's finding 7 through the
// webhook edge: an endpoint anyone may post to (scheme none) with 20 routes
// whose filters are costly, and a webhook to it; each op is one delivery,
// stored. cpu-ms/op is this process's CPU per delivery (the edge, its
// filters, the HTTP client and pgx; not Postgres's), against the same
// endpoint without routes; non-200/op the share of deliveries not answered
// 200 (each would be retried by its sender).
//
//	eval "$(deploy/local/postgres.sh)"; cd services
//	go test -tags integration -run '^$' -bench RouteFilterAttack -benchtime 5x ./ingest/
func BenchmarkRouteFilterAttack(b *testing.B) {
	e := newEnv(b)
	bigBody := []byte(`{"s":"` + strings.Repeat("a", 256<<10) + `"}`)
	for _, tc := range []struct {
		name   string
		filter string
		body   []byte
	}{
		{"no-routes/2B", "", []byte("{}")},
		{"loops/2B", loopFilter, []byte("{}")},
		{"regex/2B", regexFilter, []byte("{}")},
		{"no-routes/256KiB", "", bigBody},
		{"big-body/256KiB", bigBodyFilter, bigBody},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var routes []route
			for i := range 20 {
				if tc.filter != "" {
					routes = append(routes, route{queue: "q" + strconv.Itoa(i), filter: tc.filter})
				}
			}
			slug := e.routedEndpoint(b, "none", routes...)
			_, err := e.pool.Exec(b.Context(), `UPDATE endpoints SET max_body_bytes = 1048576 WHERE slug = $1`, slug)
			require.NoError(b, err)
			start, refused := cpuTime(b), 0
			for b.Loop() {
				if code, _ := e.post(b, slug, tc.body, nil); code != http.StatusOK {
					refused++ // before issue 31: a 503 when the filters outlast the store's timeout
				}
			}
			b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(refused)/float64(b.N), "non-200/op")
		})
	}
}
