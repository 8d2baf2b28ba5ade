//go:build integration

package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	sbmcp "github.com/switchboard/switchboard/services/mcp"
)

// rawStdio is ServeStdio over pipes, as `switchboard mcp` runs it, driven
// line by line; done gets ServeStdio's error once it ends.
type rawStdio struct {
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
}

func (l *liveNode) rawStdio(t *testing.T, token string) *rawStdio {
	t.Helper()
	conn := dialAs(t, l.node, token)
	s := sbmcp.New(sbmcp.Conns{Queue: conn, Ingest: conn, Realtime: conn}, sbmcp.Options{Version: "test"})
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	r := &rawStdio{in: clientOut, out: bufio.NewReader(clientIn), done: make(chan error, 1)}
	go func() { r.done <- sbmcp.ServeStdio(context.WithoutCancel(t.Context()), s, serverIn, serverOut) }()
	t.Cleanup(func() {
		_ = clientOut.Close()
		_ = clientIn.Close()
		select {
		case err := <-r.done:
			_ = err // what ended it is the test's to check
		case <-time.After(10 * time.Second):
			t.Error("ServeStdio did not end within 10 s of its input closing")
		}
	})
	return r
}

// send writes line and reads the one answer line.
func (r *rawStdio) send(t *testing.T, line string) string {
	t.Helper()
	_, err := io.WriteString(r.in, line+"\n")
	require.NoError(t, err)
	answer, err := r.out.ReadString('\n')
	require.NoError(t, err)
	return answer
}

// Over stdio as over HTTP a batch is refused whole with Invalid Request,
// before the handshake or after it, and the session reads on; nothing of
// the batch runs. A value that is no JSON-RPC message, or one too costly
// to decode, is refused the same way; input that is not JSON ends the
// session after a Parse error.
func TestStdioRefusesBatches(t *testing.T) {
	t.Parallel()
	l := startNode(t)
	_, todoID := l.seed(t, "stdio-batch-q")
	r := l.rawStdio(t, l.agent)
	claims := string(calls(2000, "claim_todo", map[string]any{"queue": "stdio-batch-q"}))
	refused := func(answer, message string) {
		t.Helper()
		var e jsonrpcError
		require.NoError(t, json.Unmarshal([]byte(answer), &e), answer)
		require.JSONEq(t, "null", string(e.ID))
		require.EqualValues(t, -32600, e.Error.Code)
		require.Contains(t, e.Error.Message, message)
	}

	refused(r.send(t, claims), "JSON-RPC batches are not supported")
	init := r.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",`+
		`"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	require.Contains(t, init, `"protocolVersion":"2025-06-18"`)
	_, err := io.WriteString(r.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	require.NoError(t, err)
	refused(r.send(t, "  "+claims), "JSON-RPC batches are not supported")
	refused(r.send(t, `{"hello":"world"}`), "not a JSON-RPC 2.0 request")
	refused(r.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"publish","arguments":{"channel":"c",`+
		`"payload":{`+strings.Repeat(`"k":1,`, 6000)+`"k":1}}}}`), "more than 10000 JSON values")

	id, err := strconv.ParseInt(todoID, 10, 64)
	require.NoError(t, err)
	got, err := queuev1.NewQueueServiceClient(dialAs(t, l.node, l.admin)).GetTodo(t.Context(), &queuev1.GetTodoRequest{Id: id})
	require.NoError(t, err)
	require.Equal(t, queuev1.TodoState_TODO_STATE_PENDING, got.GetTodo().GetState(), "no claim of any batch ran")

	claimed := r.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"claim_todo","arguments":{"queue":"stdio-batch-q"}}}`)
	require.Contains(t, claimed, fmt.Sprintf(`\"id\":\"%s\"`, todoID), "one request per line is served")

	var e jsonrpcError
	require.NoError(t, json.Unmarshal([]byte(r.send(t, `{"jsonrpc":"2.0","id":4,oops}`)), &e))
	require.EqualValues(t, -32700, e.Error.Code)
	require.Equal(t, "the input is not JSON; send one JSON-RPC message per line", e.Error.Message)
	select {
	case err := <-r.done:
		require.ErrorContains(t, err, "mcp over stdio: input that is not JSON")
		r.done <- err // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end on input that is not JSON")
	}
}
