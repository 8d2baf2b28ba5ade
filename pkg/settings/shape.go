package settings

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Check reports how a new value (decoded JSON: objects are map[string]any,
// numbers float64) fails the shape of key's setting, or nil when it fits. A
// key without a known shape takes any value; refusing null is the caller's
// business (it is never a valid setting).
func Check(key string, value any) error {
	sh := shapeOf(key)
	if sh == nil {
		return nil
	}
	obj, ok := value.(map[string]any)
	if !ok {
		return fmt.Errorf("must be an object with fields %s", sh.names())
	}
	for name := range obj {
		if _, ok := sh[name]; !ok {
			return fmt.Errorf("has unknown field %q (allowed: %s)", name, sh.names())
		}
	}
	for _, name := range slices.Sorted(maps.Keys(sh)) {
		r := sh[name]
		f, ok := obj[name]
		if !ok {
			return fmt.Errorf("is missing field %q", name)
		}
		n, isNum := f.(float64)
		if !isNum || n != math.Trunc(n) || n < r.min || n > r.max {
			return fmt.Errorf("field %q must be an integer from %.0f to %.0f", name, r.min, r.max)
		}
	}
	return nil
}

// names lists the shape's fields, sorted, for messages.
func (sh shape) names() string { return strings.Join(slices.Sorted(maps.Keys(sh)), ", ") }
