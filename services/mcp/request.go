package mcp

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// What one request may cost to decode. Its size is bounded by the body cap
// (SWITCHBOARD_HTTP_MAX_BODY, 4 MiB) or MaxStdioMessageBytes, but decoding
// costs by the value: the SDK and the tool decode the arguments several
// times, into maps, then a protobuf Struct the API decodes again; a 4 MiB
// body of 340,000 keys cost a node 150 MB and 1.4 s of CPU before the API
// refused it. One pass over the bytes counts the values and the nesting
// first, and a request past either bound is refused before anything
// decodes it.
const (
	// MaxRequestValues bounds the JSON values of one request, object keys
	// included. A tool's arguments are a few dozen; a model writing ten
	// thousand in one call is not an agent's use, and a program storing
	// large results has the gRPC and REST APIs.
	MaxRequestValues = 10_000
	// MaxRequestDepth bounds its nesting: well past the 64 levels the API
	// accepts in a JSON field (docs/architecture.md) inside the request's
	// own four (message, params, arguments, field); the SDK would decode
	// up to 1,000.
	MaxRequestDepth = 100
)

// checkCost refuses a JSON message with more than MaxRequestValues values
// or nested deeper than MaxRequestDepth. It only counts: a message that is
// not JSON passes, for the decoder to refuse.
func checkCost(msg []byte) *jsonrpc.Error {
	var (
		values, depth     int
		inString, escaped bool
		prev              byte // the last significant byte outside a string
	)
	for _, b := range msg {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch {
		case isSpace(b):
			continue
		case b == '"':
			inString = true
			values++
		case b == '{' || b == '[':
			values++
			if depth++; depth > MaxRequestDepth {
				return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
					"the request nests JSON deeper than %d levels, which no tool accepts", MaxRequestDepth)}
			}
		case b == '}' || b == ']':
			depth--
		case startsScalar(b) && (prev == 0 || prev == ':' || prev == ',' || prev == '['):
			values++ // a number, true, false or null: counted at its first byte
		}
		if values > MaxRequestValues {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
				"the request holds more than %d JSON values (object keys included), more than an MCP request may; "+
					"send large results or payloads over the gRPC or REST API", MaxRequestValues)}
		}
		prev = b
	}
	return nil
}

func startsScalar(b byte) bool {
	return b == '-' || (b >= '0' && b <= '9') || b == 't' || b == 'f' || b == 'n'
}
