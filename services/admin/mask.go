package admin

import (
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/fieldmaskpb"
)

// updateFields resolves an update's field mask into the set of top-level
// fields to change.
//
//   - allowed lists the paths the contract permits.
//   - wholes lists the JSON-valued fields (google.protobuf.Struct/Value) for
//     which a path inside them ("metadata.some_key", which the gateway derives
//     from a PATCH body) stands for the whole field, which is replaced.
//   - present lists the fields set to a non-default value in the message:
//     the contract's meaning of an unset (or empty) mask.
func updateFields(mask *fieldmaskpb.FieldMask, allowed, wholes, present []string) (map[string]bool, error) {
	out := map[string]bool{}
	paths := mask.GetPaths()
	if len(paths) == 0 {
		for _, f := range present {
			out[f] = true
		}
		return out, nil
	}
	for _, p := range paths {
		if head, _, ok := strings.Cut(p, "."); ok && slices.Contains(wholes, head) {
			p = head
		}
		if !slices.Contains(allowed, p) {
			return nil, invalid("update_mask", "unknown or immutable path "+strconv.Quote(p)+"; allowed: "+strings.Join(allowed, ", "))
		}
		out[p] = true
	}
	return out, nil
}

// presentIf returns name when set is true, for building "present" lists.
func presentIf(set bool, name string) []string {
	if set {
		return []string{name}
	}
	return nil
}

// set assigns v to *dst when the update names field.
func set[T any](fields map[string]bool, field string, dst *T, v T) {
	if fields[field] {
		*dst = v
	}
}
