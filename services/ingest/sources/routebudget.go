package sources

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"strconv"

	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
)

// maxFilterRegexInsts bounds the RE2 programs of one filter's patterns
// together: compiling them is work every load of the endpoint does (about
// a third of a microsecond an instruction), which no delivery pays for.
const maxFilterRegexInsts = 1000

// checkRouteCosts is the create-time side of the per-delivery budget: each
// of an endpoint's filters keeps the rules the budget relies on
// (checkFilterRules), and their worst-case estimates on bodies of
// bodyBytes, summed in route order, fit FilterBudget, so a delivery never
// runs out of it within the estimate. The first filter past it is named
// with its estimate and the sum; blameBody names endpoint.max_body_bytes
// instead (the routes did not change, the body size grew).
func checkRouteCosts(routes []Route, bodyBytes int64, blameBody bool) error {
	var sum uint64
	for i, r := range routes {
		if r.Filter == "" {
			continue
		}
		field := "endpoint.routes[" + strconv.Itoa(i) + "].filter"
		f, err := CompileFilter(r.Filter)
		if err != nil {
			return invalid(field, err.Error())
		}
		if why := checkFilterRules(f); why != "" {
			return invalid(field, why)
		}
		est := f.estimate(uint64(max(bodyBytes, 0)))
		sum = satAdd(sum, est)
		if sum <= FilterBudget {
			continue
		}
		if blameBody {
			return invalid("endpoint.max_body_bytes", fmt.Sprintf(
				"on bodies of %d bytes the routes' filters could cost %s units per delivery, over the budget of %d units for all of an endpoint's filters",
				bodyBytes, unitsText(sum), FilterBudget))
		}
		return invalid(field, fmt.Sprintf(
			"could cost %s units per delivery, %s with the filters before it, over the budget of %d units for all of an endpoint's filters (body sized by max_body_bytes, %d)",
			unitsText(est), unitsText(sum), FilterBudget, bodyBytes))
	}
	return nil
}

// unitsText writes an estimate; past any budget by far, "unbounded".
func unitsText(n uint64) string {
	if n >= maxCharge {
		return "unbounded"
	}
	return strconv.FormatUint(n, 10)
}

// checkFilterRules names the first construct of f the budget cannot price
// ("" for none): a pattern that is not a literal (compiled on every call,
// from bytes the sender chose), a literal one that is not valid RE2 or
// whose programs are too large (compiled at every load), and a string key
// taken from the event to index a map or build one (hashed whole on every
// lookup, which cel-go counts as one unit).
func checkFilterRules(f *Filter) string {
	if f.dynamicRegex {
		return "matches() must take a literal pattern: one from the event would be compiled on every call"
	}
	total := 0
	for pattern, insts := range f.regexInsts {
		if insts < 0 {
			return fmt.Sprintf("the pattern %q is not valid RE2: %s", pattern, regexError(pattern))
		}
		total += insts
	}
	if total > maxFilterRegexInsts {
		return fmt.Sprintf("its patterns compile to %d RE2 instructions, over %d", total, maxFilterRegexInsts)
	}
	checked := f.ast.NativeRep()
	for _, e := range ast.MatchDescendants(ast.NavigateAST(checked), ast.AllMatcher()) {
		if dynamicKey(checked, e) {
			return "an index or map key must be a literal or a number, not a string taken from the event (it is hashed whole on every lookup)"
		}
	}
	return ""
}

// dynamicKey reports whether e indexes a value, or builds a map, with a key
// that is not a literal and may be a string.
func dynamicKey(checked *ast.AST, e ast.NavigableExpr) bool {
	var keys []ast.Expr
	switch {
	case isIndex(e):
		keys = e.AsCall().Args()[1:]
	case e.Kind() == ast.MapKind:
		for _, ent := range e.AsMap().Entries() {
			keys = append(keys, ent.AsMapEntry().Key())
		}
	}
	for _, k := range keys {
		if k.Kind() == ast.LiteralKind {
			continue
		}
		switch checked.GetType(k.ID()).Kind() {
		case types.IntKind, types.UintKind, types.BoolKind, types.DoubleKind:
			continue
		}
		return true
	}
	return false
}

// regexError is RE2's reason for refusing pattern: one of regexp/syntax's
// fixed error codes, never the input.
func regexError(pattern string) string {
	_, err := syntax.Parse(pattern, syntax.Perl)
	if se := (*syntax.Error)(nil); errors.As(err, &se) {
		return string(se.Code)
	}
	return "it does not compile"
}

// regexCompiles reports whether every literal pattern of f compiles, so
// they can be compiled when f is planned (one that does not fails on its
// call, as it always has: no match).
func (f *Filter) regexCompiles() bool {
	for _, insts := range f.regexInsts {
		if insts < 0 {
			return false
		}
	}
	return true
}
