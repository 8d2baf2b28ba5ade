// Package structjson turns stored JSON objects (jsonb payloads) into
// google.protobuf.Struct messages on the hot paths that hand them to
// clients: every claimed todo and every realtime event goes through it.
// FromJSON builds the Struct; AppendStructProto transcodes the JSON straight
// to the Struct's protobuf wire encoding, for callers that only send it on,
// without building it. AppendJSON goes the other way, for every durable
// publish.
package structjson

import (
	"encoding/json"
	"errors"

	"google.golang.org/protobuf/types/known/structpb"
)

// ErrNotObject is returned for JSON that is valid but not an object: by
// AppendStructProto for every such value, by FromJSON for null
// (encoding/json reports the other kinds itself).
var ErrNotObject = errors.New("not a JSON object")

// FromJSON parses a JSON object into a Struct. encoding/json plus
// structpb.NewStruct gives the same values as protojson.Unmarshal (numbers
// are doubles either way; jsonb holds valid UTF-8 only) in well under half
// the time.
//
// JSON nested deeper than MaxReadDepth is refused with ErrTooDeep.
func FromJSON(raw []byte) (*structpb.Struct, error) {
	if Depth(raw) > MaxReadDepth {
		return nil, ErrTooDeep
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, ErrNotObject
	}
	return structpb.NewStruct(m)
}
