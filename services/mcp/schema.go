package mcp

import (
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// The input schemas: inferred from each tool's input struct (descriptions
// from its jsonschema tags, required = fields without omitempty), then
// narrowed with the bounds the services enforce, so a model sees them up
// front and the SDK refuses an out-of-range argument before any RPC.

// idPattern is a positive decimal int64: ids and lease tokens travel as
// strings, as protobuf's JSON mapping (and every result) writes them.
const idPattern = `^[1-9][0-9]{0,18}$`

// queuePattern is the services' queue-name rule.
const queuePattern = `^[a-z0-9][a-z0-9._-]{0,62}$`

// channelPattern is the realtime channel-name rule.
const channelPattern = `^[A-Za-z0-9][A-Za-z0-9:._/-]{0,127}$`

// property narrows one property of a schema.
type property func(*jsonschema.Schema)

func pattern(p string) property { return func(s *jsonschema.Schema) { s.Pattern = p } }

func between(lo, hi float64) property {
	return func(s *jsonschema.Schema) { s.Minimum, s.Maximum = &lo, &hi }
}

func oneOf(values ...string) property {
	return func(s *jsonschema.Schema) {
		for _, v := range values {
			s.Enum = append(s.Enum, v)
		}
	}
}

// inputSchema is In's inferred schema with the named properties narrowed.
// It panics on a property In lacks: a typo in this package, found by any
// test that builds the server.
func inputSchema[In any](narrow map[string]property) *jsonschema.Schema {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: schema of %T: %v", *new(In), err))
	}
	for name, f := range narrow {
		p, ok := s.Properties[name]
		if !ok {
			panic(fmt.Sprintf("mcp: %T has no property %q", *new(In), name))
		}
		f(p)
	}
	return s
}
