package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxResultBytes bounds one tool result or resource read as it goes on the
// wire (a tool's structured result is sent twice: as text and as
// structuredContent). The tools' own caps (pages of at most 50, free-form
// fields cut at 16 KiB, 1 KiB in lists: render.go) keep an ordinary answer
// far below it; what they do not cut (a todo's errors, one per failed
// attempt of up to 4,096 characters; an event's headers) can add up, and an
// answer is held whole until it is sent. Past it the caller is told to ask
// for less rather than sent it.
const MaxResultBytes = 1 << 20

const (
	methodCallTool     = "tools/call"
	methodReadResource = "resources/read"
)

// capResults answers a tool result over MaxResultBytes with a tool error
// saying how to ask for less, and a resource read over it with a JSON-RPC
// error.
func capResults(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || (method != methodCallTool && method != methodReadResource) {
			return res, err
		}
		b, mErr := json.Marshal(res)
		if mErr != nil {
			return res, nil //nolint:nilerr // the SDK encodes it next and reports what it cannot
		}
		if len(b) <= MaxResultBytes {
			return res, nil
		}
		if method == methodReadResource {
			return nil, &jsonrpc.Error{Code: CodeResourceExhausted, Message: fmt.Sprintf(
				"RESOURCE_EXHAUSTED: this resource is %d bytes as JSON, over the %d an MCP answer may be; "+
					"read it with the gRPC or REST API", len(b), MaxResultBytes)}
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(
			"RESOURCE_EXHAUSTED: the result is %d bytes as JSON, over the %d an MCP answer may be; ask for less: "+
				"a smaller page_size, a narrower filter, or one item by id", len(b), MaxResultBytes)}}}, nil
	}
}
