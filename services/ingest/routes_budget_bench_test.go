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

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
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
// program is large (compiled on every call), a comparison that sized a
// large body string on every step, and a loop that fits the per-delivery
// budget alone but not 19 times (budgetFilter). acceptedFilter is the
// costliest kind per unit found (cel-go's cost tracker slows down as a
// comprehension runs on), 20 of which the API accepts since issue 31.
var (
	loopFilter     = numbers(980) + `.all(x, ` + numbers(20) + `.all(y, x + y >= 0))`
	regexFilter    = numbers(30) + `.all(x, !topic.matches('` + strings.Repeat(`[a-z]{1000}`, 40) + `'))`
	bigBodyFilter  = numbers(200) + `.all(x, body.s != "b")`
	budgetFilter   = numbers(100) + `.all(x, ` + numbers(30) + `.all(y, x + y >= 0))`
	acceptedFilter = numbers(620) + `.exists_one(x, x == 100)`
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
// 200 (each would be retried by its sender); first-cpu-ms the CPU of the
// first delivery, which also loads the endpoint and compiles its routes.
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
		{"budget/2B", budgetFilter, []byte("{}")},
		{"accepted/2B", acceptedFilter, []byte("{}")},
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
			var slug string
			if tc.filter == acceptedFilter {
				slug = e.adminRoutedEndpoint(b, routes)
			} else {
				slug = e.routedEndpoint(b, "none", routes...)
			}
			_, err := e.pool.Exec(b.Context(), `UPDATE endpoints SET max_body_bytes = 1048576 WHERE slug = $1`, slug)
			require.NoError(b, err)
			// The first delivery loads the endpoint, compiling its routes
			// (again every endpointCacheTTL): measured apart.
			first := cpuTime(b)
			e.post(b, slug, tc.body, nil)
			first = cpuTime(b) - first
			start, refused := cpuTime(b), 0
			for b.Loop() {
				if code, _ := e.post(b, slug, tc.body, nil); code != http.StatusOK {
					refused++ // before issue 31: a 503 when the filters outlast the store's timeout
				}
			}
			b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(refused)/float64(b.N), "non-200/op")
			b.ReportMetric(float64(first.Microseconds())/1000, "first-cpu-ms") // after the loop: it resets metrics
		})
	}
}

// adminRoutedEndpoint creates a scheme-none endpoint with routes through
// AdminService, which refuses what does not fit the per-delivery budget.
func (e *env) adminRoutedEndpoint(tb testing.TB, routes []route) string {
	tb.Helper()
	adm, ctx := e.admin(tb)
	var rs []*adminv1.Route
	for _, r := range routes {
		rs = append(rs, &adminv1.Route{Queue: r.queue, Filter: r.filter})
	}
	created, err := adm.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Queue: "hooks", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE, Routes: rs,
	}})
	require.NoError(tb, err)
	return created.GetEndpoint().GetSlug()
}
