package sources

import (
	"math"
	"net/http"

	"cel.dev/cel-go/checker"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
)

// The static estimate of a filter's cost: cel-go's estimator over what a
// delivery to the endpoint can carry, with this package's prices
// (filtercost.go) for the calls it prices differently. It is the worst case
// for every input within the sizes, except that CEL counts no cost for
// selecting a field of a dyn value (`body.x`), which the run-time meter
// counts (one unit each); the meter stays the bound.

// Sizes a delivery can carry besides its body (the endpoint's
// max_body_bytes): a topic is cut to 255 bytes, and net/http reads at most
// DefaultMaxHeaderBytes of a request's header block plus 4096 of slop (no
// server of ours sets MaxHeaderBytes), which bounds every header's name and
// value and their count.
const (
	maxTopicBytes  = 255
	maxHeaderBytes = http.DefaultMaxHeaderBytes + 4096
)

// estimate is f's worst-case cost, in units, on deliveries whose body has
// at most bodyBytes bytes.
func (f *Filter) estimate(bodyBytes uint64) uint64 {
	est, err := filterEnv.EstimateCost(f.ast, estimator{f: f, body: bodyBytes})
	if err != nil {
		return math.MaxUint64 // no estimate: it cannot be shown to fit
	}
	return est.Max
}

// estimator is cel-go's checker.CostEstimator for one filter and body size.
type estimator struct {
	f    *Filter
	body uint64
}

// EstimateSize bounds what a path from a variable can hold, in bytes: any
// value in the body (a string, or a list or map's count) is at most the
// body's size, and likewise for headers and the topic.
func (e estimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	p := n.Path()
	if len(p) == 0 {
		return nil
	}
	switch p[0] {
	case "topic":
		return &checker.SizeEstimate{Max: maxTopicBytes}
	case "headers":
		return &checker.SizeEstimate{Max: maxHeaderBytes}
	case "body":
		return &checker.SizeEstimate{Max: e.body}
	}
	return nil
}

// EstimateCallCost prices the calls filtercost.go prices; nil leaves the
// others to CEL.
func (e estimator) EstimateCallCost(fn, _ string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	all := args
	if target != nil {
		all = append([]checker.AstNode{*target}, args...)
	}
	var units uint64
	switch fn {
	case overloads.Size:
		if len(all) != 1 || !maybeText(all[0]) {
			return nil
		}
		units = 1 + textUnits(maxSize(all[0]))
	case overloads.Matches:
		if len(all) != 2 {
			return nil
		}
		pattern, literal := literalString(all[1].Expr())
		insts, known := e.f.regexInsts[pattern]
		if !literal || !known {
			units = math.MaxUint64
			break
		}
		units = regexUnits(maxSize(all[0]), insts)
	case operators.Equals, operators.NotEquals:
		units = textUnits(min(e.work(all[0]), e.work(all[1])))
	case operators.In:
		units = e.inUnits(all[0], all[1])
	case overloads.TypeConvertInt, overloads.TypeConvertUint, overloads.TypeConvertDouble, overloads.TypeConvertBool,
		overloads.TypeConvertTimestamp, overloads.TypeConvertDuration:
		if len(all) != 1 || !maybeText(all[0]) {
			return nil
		}
		units = 1 + textUnits(maxSize(all[0]))
	case overloads.TimeGetFullYear, overloads.TimeGetMonth, overloads.TimeGetDayOfYear, overloads.TimeGetDate,
		overloads.TimeGetDayOfMonth, overloads.TimeGetDayOfWeek, overloads.TimeGetHours, overloads.TimeGetMinutes,
		overloads.TimeGetSeconds, overloads.TimeGetMilliseconds:
		if len(all) != 2 {
			return nil
		}
		units = tzLoadCost
	default:
		return nil
	}
	return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: min(1, units), Max: units}}
}

// inUnits bounds `x in c`: each element of a list compared with x (what
// one comparison walks is bounded by both sides, so all of them by the
// list's own work), or x hashed into a map.
func (e estimator) inUnits(x, c checker.AstNode) uint64 {
	wx := e.work(x)
	hashed := uint64(1)
	if maybeText(x) {
		hashed += textUnits(maxSize(x))
	}
	switch c.Type().Kind() {
	case types.MapKind:
		return hashed
	case types.ListKind:
		hashed = 0
	}
	var tenths uint64
	if c.Expr().Kind() == ast.ListKind && literalWork(c.Expr()) >= 0 {
		for _, el := range c.Expr().AsList().Elements() {
			tenths = satAdd(tenths, textFactor+min(wx, uint64(literalWork(el))))
		}
	} else { // a unit per element, and the comparisons walk neither more than x nor more than the list
		n := maxSize(c)
		tenths = satAdd(satMul(n, textFactor), min(satMul(n, wx), e.work(c)))
	}
	return max(textUnits(tenths), hashed) // dyn: a list or a map
}

// work bounds compareWork(v) for any value n can hold, in tenths: exact
// for a constant, by type for a scalar or text, and by the size hint for a
// value from the body or headers (a JSON text of S bytes holds at most S/2+1
// values and S bytes of text, so 6S+10 tenths). Any other container (built
// by the filter, of values of unknown size) is unbounded.
func (e estimator) work(n checker.AstNode) uint64 {
	if w := literalWork(n.Expr()); w >= 0 {
		return uint64(w)
	}
	switch n.Type().Kind() {
	case types.IntKind, types.UintKind, types.DoubleKind, types.BoolKind, types.NullTypeKind,
		types.TimestampKind, types.DurationKind, types.TypeKind:
		return textFactor
	case types.StringKind, types.BytesKind:
		return satAdd(textFactor, maxSize(n))
	}
	if p := n.Path(); len(p) > 0 && (p[0] == "body" || p[0] == "headers") {
		return satAdd(satMul(maxSize(n), 6), textFactor)
	}
	return math.MaxUint64
}

// literalWork is compareWork of a constant expression (literals, and lists
// and maps of them), -1 for any other.
func literalWork(e ast.Expr) int64 {
	switch e.Kind() {
	case ast.LiteralKind:
		if n, ok := textLen(e.AsLiteral()); ok {
			return textFactor + int64(n) //nolint:gosec // a filter is at most 2048 bytes
		}
		return textFactor
	case ast.ListKind:
		sum := int64(textFactor)
		for _, el := range e.AsList().Elements() {
			w := literalWork(el)
			if w < 0 {
				return -1
			}
			sum += w
		}
		return sum
	case ast.MapKind:
		sum := int64(textFactor)
		for _, ent := range e.AsMap().Entries() {
			k, v := literalWork(ent.AsMapEntry().Key()), literalWork(ent.AsMapEntry().Value())
			if k < 0 || v < 0 {
				return -1
			}
			sum += k + v
		}
		return sum
	}
	return -1
}

// maybeText reports whether n may be a string: typed so, or dyn.
func maybeText(n checker.AstNode) bool {
	switch n.Type().Kind() {
	case types.StringKind, types.DynKind, types.AnyKind:
		return true
	}
	return false
}

// maxSize is the largest size CEL (with EstimateSize) knows n may have:
// a literal string's bytes, else its estimate; unknown is unbounded.
func maxSize(n checker.AstNode) uint64 {
	if s, ok := literalString(n.Expr()); ok {
		return uint64(len(s))
	}
	if sz := n.ComputedSize(); sz != nil {
		return sz.Max
	}
	return math.MaxUint64
}

// satAdd is a + b, saturated at MaxUint64.
func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}
