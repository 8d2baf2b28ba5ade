//go:build integration

package ingest_test

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	"github.com/switchboard/switchboard/services/ingest/sources"
)

// filterSpend records what the edge's route filters spent per delivery.
type filterSpend struct {
	mu    sync.Mutex
	spent []uint64
	stops []*sources.FilterStop
}

func (f *filterSpend) observe(spent uint64, stop *sources.FilterStop) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.spent, f.stops = append(f.spent, spent), append(f.stops, stop)
}

func (f *filterSpend) last(t *testing.T) (uint64, *sources.FilterStop) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.NotEmpty(t, f.spent)
	return f.spent[len(f.spent)-1], f.stops[len(f.stops)-1]
}

// TestRouteFilterBudgetBoundsTheAttack reproduces issue 31's finding 7
// against the webhook edge: an endpoint anyone may post to, 19 routes whose
// filters each fit the budget alone but not together (stored before the
// create-time rule, as the API used to accept them), a last route without
// a filter, and a 2-byte webhook. The delivery is stored and answered 200;
// its filters charge exactly FilterBudget and stop at the route where it
// ran out: the routes before it matched, it and the filtered ones after it
// did not, the unfiltered last one did. The delivery log says where they
// stopped. (The time limit is off: under -race it would stop them first.)
func TestRouteFilterBudgetBoundsTheAttack(t *testing.T) {
	t.Parallel()
	e := newLogEnv(t)
	var seen filterSpend
	e.srv.OnRouteFilters(seen.observe)
	e.srv.SetRouteFilterTimeLimit(time.Hour)
	costly := numbers(100) + `.all(x, ` + numbers(30) + `.all(y, x + y >= 0))`

	one := e.routedEndpoint(t, "none", route{queue: "alone", filter: costly})
	code, resp := e.post(t, one, []byte("{}"), nil)
	require.Equal(t, http.StatusOK, code, resp)
	each, stop := seen.last(t)
	require.Nil(t, stop)
	require.Greater(t, each, uint64(sources.FilterBudget/4), "one filter takes a good share of the budget")

	var routes []route
	for i := range 19 {
		routes = append(routes, route{queue: "q" + strconv.Itoa(i), filter: costly})
	}
	slug := e.routedEndpoint(t, "none", append(routes, route{queue: "last"})...)
	code, resp = e.post(t, slug, []byte("{}"), http.Header{"X-Request": {"attack"}})
	require.Equal(t, http.StatusOK, code, resp)
	require.Contains(t, resp, `"accepted"`)

	spent, stop := seen.last(t)
	require.Equal(t, uint64(sources.FilterBudget), spent, "the budget, all of it, and no more")
	require.Equal(t, &sources.FilterStop{Route: int(sources.FilterBudget / each), Err: sources.ErrFilterBudget}, stop)
	want := []string{"last"}
	for i := range stop.Route {
		want = append(want, "q"+strconv.Itoa(i))
	}
	var got []string
	rows, err := e.pool.Query(t.Context(), `SELECT t.queue FROM todos t JOIN events ev ON ev.id = t.event_id
		WHERE ev.human_id = $1 AND ev.headers->>'x-request' = 'attack'`, e.human)
	require.NoError(t, err)
	for rows.Next() {
		var q string
		require.NoError(t, rows.Scan(&q))
		got = append(got, q)
	}
	require.NoError(t, rows.Err())
	require.ElementsMatch(t, want, got)

	log, err := e.deliveries(t, e.human, e.endpointID(t, slug))
	require.NoError(t, err)
	require.Len(t, log, 1)
	require.Equal(t, ingestv1.DeliveryOutcome_DELIVERY_OUTCOME_ACCEPTED, log[0].GetOutcome())
	require.NotZero(t, log[0].GetEventId(), "stored")
	require.Contains(t, log[0].GetDetail(), "route filters stopped at routes["+strconv.Itoa(stop.Route)+"]")
}

// TestRouteFilterNotRun: a filter stored before the rules whose estimate
// alone is over the budget on the endpoint's bodies (here a loop over
// literal lists: 150,000 units) is not run: its route does not match, the
// others do, the event is stored, and the delivery log says which route
// to update.
func TestRouteFilterNotRun(t *testing.T) {
	t.Parallel()
	e := newLogEnv(t)
	var seen filterSpend
	e.srv.OnRouteFilters(seen.observe)
	slug := e.routedEndpoint(t, "none",
		route{queue: "fine", filter: `body.x == 1`},
		route{queue: "huge", filter: numbers(980) + `.all(x, ` + numbers(20) + `.all(y, x + y >= 0))`},
	)
	code, resp := e.post(t, slug, []byte(`{"x":1}`), nil)
	require.Equal(t, http.StatusOK, code, resp)
	spent, stop := seen.last(t)
	require.Nil(t, stop)
	require.Less(t, spent, uint64(100), "the huge filter never ran")
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1 AND queue = 'fine'`))
	require.Equal(t, 0, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1 AND queue = 'huge'`))
	log, err := e.deliveries(t, e.human, e.endpointID(t, slug))
	require.NoError(t, err)
	require.Len(t, log, 1)
	require.Contains(t, log[0].GetDetail(), "routes[1]: its filter")
}
