package sources

import (
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// What a filter's calls cost, in CEL's abstract units (about one per
// operation), at run time. cel-go's own model prices some calls far below
// their work on the values a webhook carries, so these are priced here
// instead (each one below names what it fixes); the static estimate
// (filterestimate.go) uses the same prices over size hints.
//
//   - Every text size is its length in bytes, read in O(1). cel-go sizes a
//     string as its count of runes by converting it to []rune, on every
//     sized call: comparing a 1 MiB body string to "b" allocated 4 MiB and
//     was charged one unit.
//   - size() of a string does that conversion itself: one unit plus a
//     tenth per byte, like any text traversal (CEL: one unit).
//   - matches() walks up to every instruction of the pattern's program for
//     every byte of the input: (bytes+1) × instructions / 4. CEL charges
//     (bytes+1)/10 × pattern length/4, and `[a-z]{1000}` is 11 characters
//     for about 1000 instructions.
//   - == and != compare whole values: the smaller side's size counted
//     through every nested list and map (CEL: the top-level count).
//     `x in list` compares x with each element.
//   - `k in map` hashes the key: a tenth per byte.
//   - Conversions from text parse all of it: a tenth per byte.
//   - A time zone named by name is loaded from the zone database on every
//     call (time.LoadLocation reads its file): tzLoadCost, about what such
//     a load takes (15–40 µs) at a loop's time per unit.
const (
	textFactor = 10 // bytes per unit of a text traversal (CEL's StringTraversalCostFactor, 0.1)
	regexSteps = 4  // byte × instruction steps per unit of matches()
	tzLoadCost = 250
	// maxCharge caps one call's price: far over any budget, and never
	// near overflowing cel-go's uint64 sum (it adds without saturating).
	maxCharge = 1 << 40
)

// textUnits is a traversal of n bytes of text.
func textUnits(n uint64) uint64 {
	units := n / textFactor
	if n%textFactor != 0 {
		units++
	}
	return units
}

// regexUnits is matching an input of n bytes against a program of insts
// instructions.
func regexUnits(n uint64, insts int) uint64 {
	if insts < 0 { // does not compile: the call fails at once
		return 1
	}
	return satMul(satAdd(n, 1), uint64(insts))/regexSteps + 1
}

// satMul is a × b, saturated at maxCharge.
func satMul(a, b uint64) uint64 {
	if a != 0 && b > maxCharge/a {
		return maxCharge
	}
	return min(a*b, maxCharge)
}

// textLen is v's size in bytes when v is text.
func textLen(v ref.Val) (uint64, bool) {
	switch t := v.(type) {
	case types.String:
		return uint64(len(t)), true
	case types.Bytes:
		return uint64(len(t)), true
	}
	return 0, false
}

// callUnits prices one call of fn over args (its target first, for a member
// call) for the filter f; limit bounds the walks over nested values (a
// price past it stops the evaluation whatever it is).
func callUnits(f *Filter, fn string, args []ref.Val, limit uint64) uint64 {
	switch fn {
	case overloads.Size:
		if n, ok := textLen(args[0]); ok && args[0].Type() == types.StringType {
			return 1 + textUnits(n)
		}
	case overloads.Matches:
		n, _ := textLen(args[0])
		pattern, _ := textLen(args[1])
		insts, known := f.regexInsts[string(asString(args[1]))]
		if !known { // from the event: compiled on every call, priced as compiled
			insts = regexInstructions(string(asString(args[1])))
			n += pattern
		}
		return regexUnits(n, insts)
	case overloads.Contains:
		a, _ := textLen(args[0])
		b, _ := textLen(args[1])
		return satMul(textUnits(a), textUnits(b))
	case overloads.StartsWith, overloads.EndsWith:
		n, _ := textLen(args[1])
		return textUnits(n)
	case operators.Equals, operators.NotEquals:
		a := compareWork(args[0], limit)
		return textUnits(min(a, compareWork(args[1], textUnits(a))))
	case operators.Less, operators.LessEquals, operators.Greater, operators.GreaterEquals:
		a, aText := textLen(args[0])
		b, bText := textLen(args[1])
		if aText && bText {
			return textUnits(min(a, b))
		}
	case operators.Add:
		a, aText := textLen(args[0])
		b, bText := textLen(args[1])
		if aText && bText {
			return textUnits(a + b)
		}
	case operators.In, operators.OldIn, overloads.DeprecatedIn:
		return inUnits(args[0], args[1], limit)
	case overloads.TypeConvertInt, overloads.TypeConvertUint, overloads.TypeConvertDouble, overloads.TypeConvertBool,
		overloads.TypeConvertTimestamp, overloads.TypeConvertDuration:
		if n, ok := textLen(args[0]); ok {
			return 1 + textUnits(n)
		}
	case overloads.TypeConvertString, overloads.TypeConvertBytes:
		if n, ok := textLen(args[0]); ok {
			return textUnits(n) // as CEL prices them, in bytes
		}
	case overloads.TimeGetFullYear, overloads.TimeGetMonth, overloads.TimeGetDayOfYear, overloads.TimeGetDate,
		overloads.TimeGetDayOfMonth, overloads.TimeGetDayOfWeek, overloads.TimeGetHours, overloads.TimeGetMinutes,
		overloads.TimeGetSeconds, overloads.TimeGetMilliseconds:
		if len(args) == 2 {
			return tzLoadCost
		}
	}
	return 1
}

func asString(v ref.Val) types.String {
	s, _ := v.(types.String)
	return s
}

// inUnits prices `x in c`: one unit per element of a list, each compared
// with x; a map hashes x.
func inUnits(x, c ref.Val, limit uint64) uint64 {
	switch c := c.(type) {
	case traits.Mapper:
		n, _ := textLen(x)
		return 1 + textUnits(n)
	case traits.Lister:
		wx := compareWork(x, limit)
		total := uint64(0)
		each := func(e any) bool {
			total += textFactor + min(wx, compareWork(e, textUnits(wx)))
			return total <= satMul(limit, textFactor)
		}
		if native, ok := c.Value().([]any); ok {
			for _, e := range native {
				if !each(e) {
					break
				}
			}
			return max(textUnits(total), 1)
		}
		for it := c.Iterator(); it.HasNext() == types.True; {
			if !each(it.Next()) {
				break
			}
		}
		return max(textUnits(total), 1)
	}
	return 1
}

// compareWork is what comparing v with an equal value walks, in tenths of
// a unit: a unit per value, nested ones included, and a tenth per byte of
// text; the count stops once past limit units (so the walk itself is
// bounded by what the budget has left).
func compareWork(v any, limit uint64) uint64 {
	w := work{limit: satMul(limit, textFactor) + textFactor}
	w.add(v)
	return w.n
}

type work struct{ n, limit uint64 }

func (w *work) add(v any) {
	if w.n > w.limit {
		return
	}
	w.n += textFactor
	switch x := v.(type) {
	case string:
		w.n += uint64(len(x))
	case types.String:
		w.n += uint64(len(x))
	case types.Bytes:
		w.n += uint64(len(x))
	case []any: // the parsed body's own values, walked without adapting them
		for _, e := range x {
			w.add(e)
		}
	case map[string]any:
		for k, e := range x {
			w.n += uint64(len(k))
			w.add(e)
		}
	case map[string]string:
		for k, e := range x {
			w.n += uint64(len(k)) + textFactor + uint64(len(e))
		}
	case traits.Mapper:
		if native := x.Value(); isNativeContainer(native) {
			w.n -= textFactor
			w.add(native)
			return
		}
		for it := x.Iterator(); it.HasNext() == types.True && w.n <= w.limit; {
			k := it.Next()
			w.add(k)
			w.add(x.Get(k))
		}
	case traits.Lister:
		if native := x.Value(); isNativeContainer(native) {
			w.n -= textFactor
			w.add(native)
			return
		}
		for it := x.Iterator(); it.HasNext() == types.True && w.n <= w.limit; {
			w.add(it.Next())
		}
	}
}

func isNativeContainer(v any) bool {
	switch v.(type) {
	case []any, map[string]any, map[string]string:
		return true
	}
	return false
}
