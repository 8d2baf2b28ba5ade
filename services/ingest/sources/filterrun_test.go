package sources

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
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

func smallVars() map[string]any {
	return map[string]any{"topic": "github.push", "headers": map[string]string{"x-a": "1"}, "body": map[string]any{"n": int64(3)}}
}

// compileUntimed is CompileFilters without the time limit: tests assert
// on cost units, which a slow machine (or -race) must not change.
func compileUntimed(t *testing.T, srcs []string, bodyBytes int64) *FilterSet {
	t.Helper()
	set, err := CompileFilters(srcs, bodyBytes)
	require.NoError(t, err)
	set.timeLimit = time.Hour
	return set
}

// costOf is what src alone charges on vars, for bodies of bodyBytes.
func costOf(t *testing.T, src string, bodyBytes int64, vars map[string]any) (uint64, error) {
	t.Helper()
	run := compileUntimed(t, []string{src}, bodyBytes).Start(vars)
	defer run.Done()
	_, err := run.Eval(0)
	return run.Spent(), err
}

// TestFilterBudgetIsPerDelivery: 20 routes whose filters each cost c share
// one budget: the first FilterBudget/c run whole, the next is stopped by
// the budget, and no later one runs at all (its program is not entered);
// the run never charges more than FilterBudget. The next delivery starts
// with a whole budget.
func TestFilterBudgetIsPerDelivery(t *testing.T) {
	t.Parallel()
	src := numbers(100) + `.all(x, ` + numbers(30) + `.all(y, x + y >= 0))`
	c, err := costOf(t, src, 1024, smallVars())
	require.NoError(t, err)
	require.Greater(t, c, uint64(FilterBudget/4), "each filter costs a good share of the budget")
	srcs := make([]string, 20)
	for i := range srcs {
		srcs[i] = src
	}
	set := compileUntimed(t, srcs, 1024)
	for range 2 {
		run := set.Start(smallVars())
		whole := int(FilterBudget / c)
		for i := range srcs {
			calls := run.p.meter.calls
			ok, err := run.Eval(i)
			switch {
			case i < whole:
				require.NoError(t, err, i)
				require.True(t, ok, i)
				require.Equal(t, uint64(i+1)*c, run.Spent(), i)
			case i == whole:
				require.ErrorIs(t, err, ErrFilterBudget, i)
			default:
				require.ErrorIs(t, err, ErrFilterBudget, i)
				require.Equal(t, calls, run.p.meter.calls, "route %d is not run", i)
			}
		}
		require.Equal(t, uint64(FilterBudget), run.Spent())
		require.Equal(t, &FilterStop{Route: whole, Err: ErrFilterBudget}, run.Stop())
		run.Done()
	}
}

// TestFilterPricesWhatCELUnderprices: calls whose work grows with the
// values a webhook carries are charged for it (cel-go charged one unit, or
// sized text by converting it to runes on every call); comparing a large
// body string with a short one is still cheap (lengths differ: O(1)).
func TestFilterPricesWhatCELUnderprices(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("a", 64<<10)
	objects := make([]any, 1000)
	for i := range objects {
		objects[i] = map[string]any{"k": "v"}
	}
	digits := strings.Repeat("7", 10_000)
	for _, tc := range []struct {
		name, src string
		body      map[string]any
		atLeast   uint64
		atMost    uint64
	}{
		{"short comparison", `body.s != "b"`, map[string]any{"s": text}, 1, 5},
		{"size of text", `size(body.s) > 0`, map[string]any{"s": text}, uint64(len(text)) / 10, uint64(len(text))/10 + 10},
		{"deep equality", `body.a == body.b`, map[string]any{"a": objects, "b": append([]any(nil), objects...)}, 2000, 2600},
		{"in a list", `"x" in body.a`, map[string]any{"a": objects}, 1000, 2200},
		{"in a map by a long key", `body.s in body.m`, map[string]any{"s": text[:16<<10], "m": map[string]any{"k": 1}}, 16 << 10 / 10, 16<<10/10 + 10},
		{"regex by program size", `body.s.matches("^a+b$")`, map[string]any{"s": text[:4096]}, 4097 * 4 / regexSteps, 4097 * 20 / regexSteps},
		{"number from text", `int(body.d) > 0`, map[string]any{"d": digits}, 1000, 1010},
		{"time zone by name", `timestamp("2020-01-01T00:00:00Z").getHours("Europe/Paris") >= 0`, map[string]any{}, tzLoadCost, tzLoadCost + 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			vars := smallVars()
			vars["body"] = tc.body
			asJSON, err := json.Marshal(tc.body)
			require.NoError(t, err)
			spent, err := costOf(t, tc.src, int64(len(asJSON)), vars)
			if err != nil {
				require.NotErrorIs(t, err, ErrFilterBudget)
				require.NotErrorIs(t, err, ErrFilterNotRun)
			}
			require.GreaterOrEqual(t, spent, tc.atLeast)
			require.LessOrEqual(t, spent, tc.atMost)
		})
	}
}

// TestFilterTimeLimit: a run past its deadline stops at the next clock
// read (every clockEvery calls) with ErrFilterTime, whatever budget is
// left, and runs no later filter.
func TestFilterTimeLimit(t *testing.T) {
	t.Parallel()
	src := numbers(50) + `.all(x, x >= 0)`
	set, err := CompileFilters([]string{src, src}, 1024)
	require.NoError(t, err)
	set.timeLimit = -1
	run := set.Start(smallVars())
	defer run.Done()
	_, err = run.Eval(0)
	require.ErrorIs(t, err, ErrFilterTime)
	_, err = run.Eval(1)
	require.ErrorIs(t, err, ErrFilterTime)
	require.Equal(t, &FilterStop{Route: 0, Err: ErrFilterTime}, run.Stop())
	require.Equal(t, uint64(FilterBudget), run.Spent())
}

// TestFilterNotRun: a stored filter that could not be stored today (a
// pattern from the event, patterns too large, an estimate alone over the
// budget on the endpoint's bodies) is never run: its route does not match,
// and the routes after it still run under the budget.
func TestFilterNotRun(t *testing.T) {
	t.Parallel()
	srcs := []string{
		`topic.matches(headers["x-pattern"])`,
		`topic.matches("` + strings.Repeat(`[a-z]{500}`, 3) + `")`,
		`body.l.all(x, x >= 0)`, // a list of a 1 MiB body: over the budget
		`body.n == 3`,
	}
	set, err := CompileFilters(srcs, 1<<20)
	require.NoError(t, err)
	run := set.Start(smallVars())
	defer run.Done()
	for i := range 3 {
		_, err := run.Eval(i)
		require.ErrorIs(t, err, ErrFilterNotRun, i)
	}
	ok, err := run.Eval(3)
	require.NoError(t, err)
	require.True(t, ok)
	require.Nil(t, run.Stop())

	small, err := CompileFilters(srcs[2:3], 1024)
	require.NoError(t, err)
	require.True(t, small.runs[0], "the same filter fits on 1 KiB bodies")
}

// TestFilterRunsConcurrently: deliveries running one set at once each have
// a whole budget of their own (run with -race).
func TestFilterRunsConcurrently(t *testing.T) {
	t.Parallel()
	src := numbers(20) + `.all(x, ` + numbers(30) + `.all(y, x + y >= 0))`
	c, err := costOf(t, src, 1024, smallVars())
	require.NoError(t, err)
	set := compileUntimed(t, []string{src, src}, 1024)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 3 {
				run := set.Start(smallVars())
				for i := range 2 {
					ok, err := run.Eval(i)
					require.NoError(t, err)
					require.True(t, ok)
				}
				require.Equal(t, 2*c, run.Spent())
				run.Done()
			}
		})
	}
	wg.Wait()
}
