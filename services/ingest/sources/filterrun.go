package sources

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// One delivery's route filters run under one cost budget, carried from
// route to route in order, and one time limit: whatever the number of
// routes, a delivery costs at most FilterBudget units of filter work.
const (
	// FilterBudget is what evaluating an endpoint's route filters may cost
	// for one delivery, all routes together, in CEL cost units as priced
	// here (filtercost.go). Twenty everyday filters (a header, a body field,
	// a prefix) cost a few hundred; the rest leaves room for one scan of a
	// ~500 KB body string or a loop over a small body's list. Spent on the
	// loops that cost the most time per unit it takes 10–20 ms of one core
	// (BenchmarkFilterBudget). An endpoint's filters must fit it together
	// in the worst case to be stored (checkRouteCosts).
	FilterBudget = 50_000
	// FilterTimeLimit bounds the same evaluation in wall-clock time, read
	// every clockEvery calls: the backstop for work the prices miss, such
	// as cel-go's cost tracker itself, whose bookkeeping grows with the
	// length of a loop (exists_one over 600 elements: about 1 µs a unit).
	FilterTimeLimit = 25 * time.Millisecond
	clockEvery      = 8
)

// Why a delivery's filters stopped before its last route (FilterStop.Err).
var (
	ErrFilterBudget = errors.New("the route filters' cost budget for one delivery ran out")
	ErrFilterTime   = errors.New("the route filters' time limit for one delivery ran out")
	// ErrFilterNotRun: the filter could not be stored today: it breaks a
	// rule of checkFilterRules (a pattern from the event, patterns too
	// large to compile at every load) or its estimate alone is over the
	// budget on the endpoint's bodies. Stored before issue 31, it is never
	// run, so its route never matches: a single call of such a filter can
	// run long past any budget before its price is known (a regex over a
	// 1 MiB body: seconds).
	ErrFilterNotRun = errors.New("the route's filter cannot fit the filter rules or budget and is not run")
)

// FilterStop is where a delivery's filters stopped: the route whose filter
// was cut, and why. That route and every later one with a filter did not
// match; routes without one still did.
type FilterStop struct {
	Route int
	Err   error
}

// FilterSet is an endpoint's route filters, compiled once per load of it
// and safe for concurrent use: each delivery runs them (Start) on a copy
// of the programs of its own, since the budget left is the program's
// cost limit.
type FilterSet struct {
	filters   []*Filter // by route; nil: the route has none
	runs      []bool    // by route: its filter is run (ErrFilterNotRun)
	timeLimit time.Duration

	mu   sync.Mutex
	idle []*programs
}

// programs are a set's filters planned against one meter.
type programs struct {
	meter meter
	progs []cel.Program // by route
}

// meter is what the programs of one copy read while they run: the
// evaluation's cost limit (every program's cel-go CostTracker.Limit points
// here) and the deadline.
type meter struct {
	limit    uint64
	charge   uint64 // the price CallCost last returned (it returns a pointer)
	calls    uint64
	deadline time.Time
	late     bool
}

// callCosts is one program's cel-go ActualCostEstimator: it prices every
// call (callUnits) and, past the deadline, prices it out of any budget.
type callCosts struct {
	m *meter
	f *Filter
}

func (c callCosts) CallCost(fn, _ string, args []ref.Val, _ ref.Val) *uint64 {
	m := c.m
	m.calls++
	if m.calls%clockEvery == 0 && time.Now().After(m.deadline) {
		m.late = true
	}
	if m.late {
		m.charge = maxCharge
	} else {
		m.charge = min(callUnits(c.f, fn, args, m.limit), maxCharge)
	}
	return &m.charge
}

// CompileFilters compiles an endpoint's route filters, by route ("": the
// route has none), for bodies of at most bodyBytes (the endpoint's
// max_body_bytes); nil when no route has one. It plans them once, so a
// stored filter cel-go cannot plan fails here, at load, naming its route.
func CompileFilters(srcs []string, bodyBytes int64) (*FilterSet, error) {
	s := &FilterSet{filters: make([]*Filter, len(srcs)), runs: make([]bool, len(srcs)), timeLimit: FilterTimeLimit}
	some := false
	for i, src := range srcs {
		if src == "" {
			continue
		}
		f, err := CompileFilter(src)
		if err != nil {
			return nil, fmt.Errorf("route %d filter: %w", i, err)
		}
		s.filters[i], some = f, true
		s.runs[i] = checkFilterRules(f) == "" && f.estimate(uint64(max(bodyBytes, 0))) <= FilterBudget
	}
	if !some {
		return nil, nil
	}
	p, err := s.plan()
	if err != nil {
		return nil, err
	}
	s.idle = append(s.idle, p)
	return s, nil
}

// SetTimeLimit replaces the set's time limit before any Start: tests that
// assert on the budget turn it off, as a slow machine (or -race) reaches
// it first.
func (s *FilterSet) SetTimeLimit(d time.Duration) { s.timeLimit = d }

// Has reports whether route i has a filter.
func (s *FilterSet) Has(i int) bool { return s != nil && s.filters[i] != nil }

func (s *FilterSet) plan() (*programs, error) {
	p := &programs{progs: make([]cel.Program, len(s.filters))}
	for i, f := range s.filters {
		if f == nil || !s.runs[i] {
			continue
		}
		opts := []cel.ProgramOption{
			cel.CostTracking(callCosts{m: &p.meter, f: f}),
			cel.CostTrackerOptions(func(t *interpreter.CostTracker) error {
				t.Limit = &p.meter.limit
				return nil
			}),
		}
		if f.regexCompiles() { // literal patterns compiled once here, not on every call
			opts = append(opts, cel.OptimizeRegex(interpreter.MatchesRegexOptimization))
		}
		prg, err := filterEnv.Program(f.ast, opts...)
		if err != nil {
			return nil, fmt.Errorf("route %d filter: %w", i, err)
		}
		p.progs[i] = prg
	}
	return p, nil
}

// FilterRun is one delivery's run of a set's filters, route by route, under
// one budget. It is not safe for concurrent use; Done ends it.
type FilterRun struct {
	set   *FilterSet
	p     *programs
	vars  interpreter.Activation
	err   error // the programs could not be planned
	left  uint64
	spent uint64
	stop  *FilterStop
}

// Start begins a delivery's run over vars (topic, headers, body).
func (s *FilterSet) Start(vars map[string]any) *FilterRun {
	r := &FilterRun{set: s, left: FilterBudget}
	r.vars, r.err = interpreter.NewActivation(vars)
	if r.err != nil {
		return r
	}
	if r.p, r.err = s.take(); r.err != nil {
		return r
	}
	r.p.meter = meter{deadline: time.Now().Add(s.timeLimit)}
	return r
}

// Eval runs route i's filter with what is left of the budget. An error is
// the filter's own (a missing key, a wrong type: no match), ErrFilterNotRun,
// or the run's stop (ErrFilterBudget, ErrFilterTime) from this route on.
func (r *FilterRun) Eval(i int) (bool, error) {
	switch {
	case r.err != nil:
		return false, r.err
	case r.stop != nil:
		return false, r.stop.Err
	case !r.set.runs[i]:
		return false, ErrFilterNotRun
	}
	m := &r.p.meter
	m.limit = r.left
	out, det, err := r.p.progs[i].Eval(r.vars)
	var spent uint64
	if c := det.ActualCost(); c != nil {
		spent = *c
	}
	switch {
	case m.late:
		r.stopAt(i, ErrFilterTime)
	case spent > m.limit:
		r.stopAt(i, ErrFilterBudget)
	default:
		r.left -= spent
		r.spent += spent
	}
	if r.stop != nil {
		return false, r.stop.Err
	}
	if err != nil {
		return false, err
	}
	return out == types.True, nil
}

// stopAt ends the run at route i: the budget counts as spent.
func (r *FilterRun) stopAt(i int, why error) {
	r.stop = &FilterStop{Route: i, Err: why}
	r.spent += r.left
	r.left = 0
}

// Spent is what the run charged against the budget so far (at most
// FilterBudget).
func (r *FilterRun) Spent() uint64 { return r.spent }

// Stop is where the run stopped, nil while it has not.
func (r *FilterRun) Stop() *FilterStop { return r.stop }

// Done ends the run and keeps its programs for another delivery.
func (r *FilterRun) Done() {
	if r.p == nil {
		return
	}
	r.set.mu.Lock()
	defer r.set.mu.Unlock()
	if len(r.set.idle) < runtime.GOMAXPROCS(0) {
		r.set.idle = append(r.set.idle, r.p)
	}
	r.p = nil
}

// take returns idle programs, or plans new ones for a delivery running
// alongside others.
func (s *FilterSet) take() (*programs, error) {
	s.mu.Lock()
	if n := len(s.idle); n > 0 {
		p := s.idle[n-1]
		s.idle = s.idle[:n-1]
		s.mu.Unlock()
		return p, nil
	}
	s.mu.Unlock()
	return s.plan()
}
