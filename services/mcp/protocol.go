package mcp

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MinProtocolVersion is the oldest MCP revision the server negotiates:
// 2025-06-18 removed JSON-RPC batching, which 2025-03-26 required a server
// to accept. One POST (or one line over stdio) is then one request, so its
// cost is one call's: a batch of 2,000 list_todos in a 243 KB body ran
// 2,000 RPCs and buffered 67 MB for one answer (issue 31), and the body cap
// allowed about 33,000. A client that asks for an older revision is
// offered the newest this one speaks; MCP clients have spoken 2025-06-18
// since mid-2025 (the pinned Inspector too).
const MinProtocolVersion = "2025-06-18"

// protocolVersions are the SDK's revisions from MinProtocolVersion on.
func protocolVersions() []string {
	return slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v < MinProtocolVersion })
}

// CodeResourceExhausted is the JSON-RPC error code of a request refused
// because its caller holds too much on the node (in the range JSON-RPC
// leaves to servers); tool calls are refused as tool errors instead, which
// a model reads.
const CodeResourceExhausted = -32000

// batchMessage is the whole answer to a batch, as one Invalid Request
// error with a null id (batchRefusal), as JSON-RPC answers a request it
// cannot take apart; none of the batch's calls run.
var batchMessage = fmt.Sprintf("JSON-RPC batches are not supported: this server speaks MCP %s and later, "+
	"which removed them; send one request per message", MinProtocolVersion)

var batchRefusal = errorResponse(jsonrpc.CodeInvalidRequest, batchMessage)

// errorResponse is a JSON-RPC error response with a null id, for a request
// whose id is not read (the SDK's encoder would leave the id out).
func errorResponse(code int64, message string) []byte {
	b, err := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", nil, &jsonrpc.Error{Code: code, Message: message}})
	if err != nil {
		panic(fmt.Sprintf("mcp: encode an error response: %v", err)) // a string and a number always encode
	}
	return b
}

// isBatch reports whether a JSON message (leading whitespace trimmed) is
// an array: a JSON-RPC batch.
func isBatch(first byte) bool { return first == '[' }

// isSpace reports JSON's insignificant whitespace.
func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }
