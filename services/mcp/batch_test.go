//go:build integration

package mcp_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	sbmcp "github.com/switchboard/switchboard/services/mcp"
)

// rawAnswer is an answer of /mcp as it came.
type rawAnswer struct {
	status int
	header http.Header
	body   []byte
	closed bool // the node closed the connection after it
}

// post sends body to /mcp as token with the headers an MCP client sends
// (and extra, "Name: value"), and returns the answer.
func (l *liveNode) post(t *testing.T, token string, body []byte, extra ...string) rawAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+l.node.HTTPAddr()+"/mcp", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for _, h := range extra {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := l.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return rawAnswer{status: resp.StatusCode, header: resp.Header, body: b, closed: resp.Close}
}

// jsonrpcError is a JSON-RPC error answer, its id kept raw.
type jsonrpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// rpcError decodes a's body as a JSON-RPC error answer.
func (a rawAnswer) rpcError(t *testing.T) jsonrpcError {
	t.Helper()
	require.Equal(t, "application/json", a.header.Get("Content-Type"), string(a.body))
	var e jsonrpcError
	require.NoError(t, json.Unmarshal(a.body, &e), string(a.body))
	require.Equal(t, "2.0", e.JSONRPC)
	return e
}

// calls is a JSON-RPC batch of n tools/call requests of tool with args.
func calls(n int, tool string, args map[string]any) []byte {
	msgs := make([]map[string]any, n)
	for i := range msgs {
		msgs[i] = map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
			"params": map[string]any{"name": tool, "arguments": args}}
	}
	b, _ := json.Marshal(msgs)
	return b
}

// Issue 31's attack: one POST holding a batch of 2,000 calls, without the
// MCP-Protocol-Version header (as a 2025-03-26 client sends it), with it,
// or after whitespace, is answered 400 with one Invalid Request error of
// null id, and not one of its calls runs: the batch of claims leaves the
// todo pending, never attempted.
func TestBatchIsRefusedAndNothingRuns(t *testing.T) {
	t.Parallel()
	l := startNode(t)
	_, todoID := l.seed(t, "batch-q")
	claims := calls(2000, "claim_todo", map[string]any{"queue": "batch-q"})
	for name, tc := range map[string]struct {
		body   []byte
		header []string
	}{
		"2,000 claims, no version header": {claims, nil},
		"2,000 claims as 2025-06-18":      {claims, []string{"MCP-Protocol-Version: 2025-06-18"}},
		"after whitespace":                {append([]byte(" \r\n\t"), claims...), nil},
		"a batch of one":                  {calls(1, "claim_todo", map[string]any{"queue": "batch-q"}), nil},
		"2,000 reads":                     {calls(2000, "list_todos", map[string]any{}), nil},
	} {
		a := l.post(t, l.agent, tc.body, tc.header...)
		require.Equal(t, http.StatusBadRequest, a.status, "%s: %s", name, a.body)
		e := a.rpcError(t)
		require.JSONEq(t, "null", string(e.ID), name)
		require.EqualValues(t, -32600, e.Error.Code, name)
		require.Equal(t, "JSON-RPC batches are not supported: this server speaks MCP 2025-06-18 and later, "+
			"which removed them; send one request per message", e.Error.Message, name)
	}
	id, err := strconv.ParseInt(todoID, 10, 64)
	require.NoError(t, err)
	got, err := queuev1.NewQueueServiceClient(dialAs(t, l.node, l.admin)).GetTodo(t.Context(), &queuev1.GetTodoRequest{Id: id})
	require.NoError(t, err)
	require.Equal(t, queuev1.TodoState_TODO_STATE_PENDING, got.GetTodo().GetState(), "no claim of any batch ran")
	require.Zero(t, got.GetTodo().GetAttempt())

	single := l.post(t, l.agent, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call",`+
		`"params":{"name":"claim_todo","arguments":{"queue":"batch-q"}}}`))
	require.Equal(t, http.StatusOK, single.status, "one request per POST is served: %s", single.body)
	require.Contains(t, string(single.body), `\"id\":\"`+todoID+`\"`)
}

// Only revisions without batches are spoken: a client asking for
// 2025-03-26 is offered a newer one, and a request that names an older
// revision in its header is refused.
func TestOnlyRevisionsWithoutBatchesAreNegotiated(t *testing.T) {
	t.Parallel()
	l := startNode(t)
	for _, asked := range []string{"2024-11-05", "2025-03-26"} {
		a := l.post(t, l.reader, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+
			`{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`, asked))
		require.Equal(t, http.StatusOK, a.status, string(a.body))
		var init struct {
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal(a.body, &init), string(a.body))
		require.GreaterOrEqual(t, init.Result.ProtocolVersion, sbmcp.MinProtocolVersion, "asked %s", asked)
		require.True(t, slices.Contains(mcp.SupportedProtocolVersions(), init.Result.ProtocolVersion))

		a = l.post(t, l.reader, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`), "MCP-Protocol-Version: "+asked)
		require.Equal(t, http.StatusBadRequest, a.status, "a request in %s: %s", asked, a.body)
		require.Contains(t, string(a.body), "Unsupported protocol version")
	}
	a := l.post(t, l.reader, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`), "MCP-Protocol-Version: 2025-06-18")
	require.Equal(t, http.StatusOK, a.status, string(a.body))
}

// A request that would cost too much to decode is refused before
// anything decodes it, 400 with Invalid Request naming the bound; one
// within the bounds is served.
func TestCostlyRequestsAreRefused(t *testing.T) {
	t.Parallel()
	l := startNode(t)
	publish := func(payload string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"publish",` +
			`"arguments":{"channel":"cost","durable":true,"payload":` + payload + `}}}`)
	}
	keys := func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"k%d":%d`, i, i)
		}
		return b.String() + "}"
	}
	deep := strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100)
	for name, tc := range map[string]struct {
		body []byte
		want string
	}{
		"5,000 keys":      {publish(keys(5000)), "more than 10000 JSON values"},
		"nested 103 deep": {publish(deep), "deeper than 100 levels"},
	} {
		a := l.post(t, l.admin, tc.body)
		require.Equal(t, http.StatusBadRequest, a.status, "%s: %s", name, a.body)
		e := a.rpcError(t)
		require.EqualValues(t, -32600, e.Error.Code, name)
		require.Contains(t, e.Error.Message, tc.want, name)
	}
	a := l.post(t, l.admin, publish(keys(4000)))
	require.Equal(t, http.StatusOK, a.status, string(a.body))
	require.NotContains(t, string(a.body), `"isError":true`, "8,000 values and the request's few more are served")
}
