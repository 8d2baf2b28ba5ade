package sources

import (
	"errors"
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/apierr"
)

func filterRoutes(filters ...string) []Route {
	out := make([]Route, len(filters))
	for i, f := range filters {
		out[i] = Route{Queue: "q", Filter: f}
	}
	return out
}

// requireViolation asserts err is INVALID_ARGUMENT naming field, with a
// description that contains each of parts.
func requireViolation(t *testing.T, err error, field string, parts ...string) {
	t.Helper()
	var ae *apierr.Error
	require.ErrorAs(t, err, &ae)
	require.ErrorIs(t, err, apierr.ErrInvalidArgument)
	require.Len(t, ae.Violations, 1)
	require.Equal(t, field, ae.Violations[0].Field, "%v", err)
	for _, p := range parts {
		require.Contains(t, ae.Violations[0].Description, p)
	}
}

// TestCheckRouteCosts: an endpoint's filters are stored only if their
// worst-case estimates on the endpoint's bodies, summed in route order,
// fit FilterBudget; the first one past it is named with its estimate, the
// sum and the budget, or max_body_bytes when the body size grew.
func TestCheckRouteCosts(t *testing.T) {
	t.Parallel()
	cheap := `headers["x-github-event"] == "pull_request" && body.action in ["opened", "reopened"] && body.number > 10`
	twenty := make([]string, 20)
	for i := range twenty {
		twenty[i] = cheap
	}
	require.NoError(t, checkRouteCosts(filterRoutes(twenty...), 25<<20, false), "everyday filters fit on the largest bodies")

	labels := `body.labels.exists(l, l.name == "bug")`
	err := checkRouteCosts(filterRoutes(cheap, labels), 1<<20, false)
	requireViolation(t, err, "endpoint.routes[1].filter", "could cost", "over the budget of 50000 units", "max_body_bytes, 1048576")
	require.NoError(t, checkRouteCosts(filterRoutes(cheap, labels), 1024, false), "a loop over the body fits on small bodies")

	// About a third of the budget each: the third one is over it.
	third := numbers(100) + `.all(x, ` + numbers(30) + `.all(y, x + y >= 0))`
	est := mustCompile(t, third).estimate(1024)
	require.Greater(t, est, uint64(FilterBudget/3))
	require.LessOrEqual(t, 2*est, uint64(FilterBudget))
	err = checkRouteCosts(filterRoutes(third, cheap, third, third), 1024, false)
	requireViolation(t, err, "endpoint.routes[3].filter", "with the filters before it")

	err = checkRouteCosts(filterRoutes(cheap, labels), 1<<20, true)
	requireViolation(t, err, "endpoint.max_body_bytes", "on bodies of 1048576 bytes", "over the budget of 50000 units")

	err = checkRouteCosts(filterRoutes(`size(body.text) > 3`), 1<<20, false)
	requireViolation(t, err, "endpoint.routes[0].filter", "could cost 104861 units")
	err = checkRouteCosts(filterRoutes(`body.a == body.b`), 1<<20, false)
	requireViolation(t, err, "endpoint.routes[0].filter")
}

// TestCheckFilterRules: what the budget cannot price is refused, naming
// the filter; what it can is not.
func TestCheckFilterRules(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		`topic.matches(headers["x-pattern"])`:                               "literal pattern",
		`matches(topic, body.p)`:                                            "literal pattern",
		`topic.matches("(a")`:                                               "not valid RE2: missing closing )",
		`topic.matches("` + strings.Repeat("[a-z]{100}", 11) + `")`:         "over 1000",
		`body.m[body.k] == 1`:                                               "index or map key",
		`headers[topic] == "1"`:                                             "index or map key",
		`{body.k: 1}.size() == 1`:                                           "index or map key",
		`topic.matches("^github\\.(push|pull_request)$")`:                   "",
		`body.items[0].id == 1 && body.items[size(body.items) - 1].id == 2`: "",
		`{"a": body.x}.a == 1 && headers["x-a"] == "1"`:                     "",
	} {
		require.Contains(t, checkFilterRules(mustCompile(t, src)), want, src)
		if want == "" {
			require.Empty(t, checkFilterRules(mustCompile(t, src)), src)
		}
	}
	err := checkRouteCosts(filterRoutes(`true`, `topic.matches(headers["p"])`), 1024, false)
	requireViolation(t, err, "endpoint.routes[1].filter", "literal pattern")
}

// TestEstimateBoundsTheRun: on the worst input its sizes allow, a filter's
// run costs no more than its estimate, plus a unit for each selection of
// a dyn field (which cel-go's estimate does not count).
func TestEstimateBoundsTheRun(t *testing.T) {
	t.Parallel()
	const size = 4096
	text := strings.Repeat("a", size-8)
	numbersList := make([]any, size/2-2)
	for i := range numbersList {
		numbersList[i] = int64(1)
	}
	for _, tc := range []struct {
		src     string
		body    any
		selects uint64
	}{
		{`body.s.contains("zz")`, map[string]any{"s": text}, 1},
		{`size(body.s) > 0`, map[string]any{"s": text}, 1},
		{`body.s.matches("^a+b$")`, map[string]any{"s": text}, 1},
		{`body.a == body.b`, map[string]any{"a": numbersList[:size/4-4], "b": numbersList[:size/4-4]}, 2},
		{`body.l.all(x, x >= 0)`, map[string]any{"l": numbersList}, 1},
		{`2 in body.l`, map[string]any{"l": numbersList}, 1},
	} {
		f := mustCompile(t, tc.src)
		est := f.estimate(size)
		require.LessOrEqual(t, est, uint64(FilterBudget), tc.src)
		vars := smallVars()
		vars["body"] = tc.body
		spent, err := costOf(t, tc.src, size, vars)
		if err != nil {
			require.False(t, errors.Is(err, ErrFilterBudget) || errors.Is(err, ErrFilterNotRun), "%s: %v", tc.src, err)
		}
		require.LessOrEqual(t, spent, est+tc.selects, tc.src)
		require.Greater(t, spent, est/4, "%s: the estimate is near the worst case", tc.src)
	}
}

func mustCompile(t *testing.T, src string) *Filter {
	t.Helper()
	f, err := CompileFilter(src)
	require.NoError(t, err, src)
	return f
}

// TestRegexInstructions: a pattern's size is its compiled program's, and
// the bound read from its tree without compiling is never below it.
func TestRegexInstructions(t *testing.T) {
	t.Parallel()
	for _, p := range []string{`^github\.(push|pull_request)$`, `[a-z]{100}b`, `(ab|cd){2,5}x*`, `a{3,}`, `(?i)hello`, `^(a+)+$`, `[a-z]{300}`} {
		re, err := syntax.Parse(p, syntax.Perl)
		require.NoError(t, err)
		prog, err := syntax.Compile(re.Simplify())
		require.NoError(t, err)
		require.Equal(t, len(prog.Inst), regexInstructions(p), p)
		require.GreaterOrEqual(t, regexSizeBound(re), len(prog.Inst), p)
	}
	require.Equal(t, -1, regexInstructions(`(a`))
	require.Greater(t, regexInstructions(strings.Repeat(`[a-z]{1000}`, 40)), 40_000, "bounded, not compiled")
}
