package structjson

import "errors"

// MaxReadDepth is the deepest JSON nesting FromJSON and AppendStructProto
// render. Requests are capped far lower when they are written (see the
// request guard); this only guards reads of rows stored before that cap
// existed or written around the API. Protobuf decoders refuse messages
// nested more than 10,000 levels deep, and every JSON level costs up to
// three (Struct, its map entry, Value), so a deeper value would be sent and
// then fail in the client, taking its whole response with it.
const MaxReadDepth = 1000

// ErrTooDeep is returned by FromJSON and AppendStructProto for JSON nested
// deeper than MaxReadDepth.
var ErrTooDeep = errors.New("JSON nested too deeply to deliver")

// Depth is the deepest nesting of objects and arrays in raw, which must be
// valid JSON (a scalar is 0, {} is 1, {"a":[1]} is 2). It reads raw once and
// allocates nothing.
func Depth(raw []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, b := range raw {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch b {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			depth++
			deepest = max(deepest, depth)
		case b == '}' || b == ']':
			depth--
		}
	}
	return deepest
}
