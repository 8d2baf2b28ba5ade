package mcp

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// capResults lets an answer within MaxResultBytes through as it is, turns
// a tool result over it into a tool error and a resource over it into a
// JSON-RPC error, and leaves other methods alone.
func TestCapResults(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", MaxResultBytes)
	answer := func(method string, res mcp.Result) (mcp.Result, error) {
		return capResults(func(context.Context, string, mcp.Request) (mcp.Result, error) { return res, nil })(t.Context(), method, nil)
	}
	small := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}
	got, err := answer("tools/call", small)
	require.NoError(t, err)
	require.Same(t, small, got)

	got, err = answer("tools/call", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: big}}})
	require.NoError(t, err)
	tool := got.(*mcp.CallToolResult)
	require.True(t, tool.IsError)
	require.Contains(t, tool.Content[0].(*mcp.TextContent).Text, "RESOURCE_EXHAUSTED: the result is 1048615 bytes as JSON, over the 1048576")

	_, err = answer("resources/read", &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "switchboard://todos/1", Text: big}}})
	var rpc *jsonrpc.Error
	require.ErrorAs(t, err, &rpc)
	require.EqualValues(t, CodeResourceExhausted, rpc.Code)
	require.Contains(t, rpc.Message, "read it with the gRPC or REST API")

	list := &mcp.ListToolsResult{Tools: []*mcp.Tool{{Name: big}}}
	got, err = answer("tools/list", list)
	require.NoError(t, err)
	require.Same(t, list, got, "only tool results and resources are capped")
}
