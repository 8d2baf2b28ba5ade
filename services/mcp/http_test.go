//go:build integration

package mcp_test

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/status"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
)

var allTools = []string{
	"claim_todo", "complete_todo", "fail_todo", "get_event", "get_todo", "heartbeat_todo",
	"list_events", "list_queues", "list_todos", "presence", "publish", "queue_stats",
}

// seed publishes an event that enqueues a todo on queue, as the tenant's
// administrator, and returns both ids as the tools show them.
func (l *liveNode) seed(t *testing.T, queue string) (eventID, todoID string) {
	t.Helper()
	ingest := ingestv1.NewIngestServiceClient(dialAs(t, l.node, l.admin))
	p, err := ingest.PublishEvent(t.Context(), &ingestv1.PublishEventRequest{
		Topic: "build.finished", Payload: []byte(`{"ok":true}`), ContentType: "application/json", Queue: queue,
	})
	require.NoError(t, err)
	return strconv.FormatInt(p.GetEvent().GetId(), 10), strconv.FormatInt(p.GetTodoId(), 10)
}

// Every tool through the SDK's own client over /mcp with an agent's
// credential, against real rows: the read tools see the tenant's event and
// todo, and the agent works the todo through its lease.
func TestEveryToolOverHTTP(t *testing.T) {
	t.Parallel()
	l := startNode(t)
	eventID, todoID := l.seed(t, "mcp-q")
	s := l.overHTTP(t, l.agent)

	tools, err := s.ListTools(t.Context(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		assert.NotEmpty(t, tool.Description, tool.Name)
		assert.NotNil(t, tool.InputSchema, tool.Name)
	}
	slices.Sort(names)
	require.Equal(t, allTools, names)

	events := call(t, s, "list_events", map[string]any{"topic": "build.finished"})["events"].([]any)
	require.Len(t, events, 1)
	require.Equal(t, eventID, events[0].(map[string]any)["id"])
	require.NotContains(t, events[0], "payload", "lists carry no payload")
	event := call(t, s, "get_event", map[string]any{"id": eventID})
	require.Equal(t, `{"ok":true}`, event["payload"])
	require.NotContains(t, event, "payload_truncated")

	todos := call(t, s, "list_todos", map[string]any{"queue": "mcp-q", "state": "pending"})["todos"].([]any)
	require.Len(t, todos, 1)
	require.Equal(t, todoID, todos[0].(map[string]any)["id"])
	todo := call(t, s, "get_todo", map[string]any{"id": todoID})
	require.Equal(t, eventID, todo["event_id"])
	require.Equal(t, "TODO_STATE_PENDING", todo["state"])
	require.Equal(t, "1", call(t, s, "queue_stats", map[string]any{"queue": "mcp-q"})["pending_ready"])
	queues := call(t, s, "list_queues", nil)["queues"].([]any)
	require.Equal(t, "mcp-q", queues[0].(map[string]any)["queue"])

	id, lease := claimOne(t, s, "mcp-q")
	require.Equal(t, todoID, id)
	beat := call(t, s, "heartbeat_todo", map[string]any{"id": id, "lease_token": lease, "progress": map[string]any{"done": 1}})
	require.NotEmpty(t, beat["lease_expires_at"])
	done := call(t, s, "complete_todo", map[string]any{"id": id, "lease_token": lease, "result": map[string]any{"answer": 42}})
	require.Equal(t, false, done["already"])
	require.Equal(t, "TODO_STATE_COMPLETED", done["todo"].(map[string]any)["state"])
	require.Equal(t, map[string]any{"answer": float64(42)}, done["todo"].(map[string]any)["result"])

	_, second := l.seed(t, "mcp-q")
	id, lease = claimOne(t, s, "mcp-q")
	require.Equal(t, second, id)
	failed := call(t, s, "fail_todo", map[string]any{"id": id, "lease_token": lease, "error": "boom", "dead_letter": true})
	require.Equal(t, "TODO_STATE_DEAD", failed["todo"].(map[string]any)["state"])
	require.Equal(t, "boom", failed["todo"].(map[string]any)["last_error"])
	empty := call(t, s, "claim_todo", map[string]any{"queue": "mcp-q", "wait_seconds": 0.2})
	require.Empty(t, empty["todos"], "nothing left to claim")

	published := call(t, s, "publish", map[string]any{"channel": "mcp-room", "kind": "note", "payload": map[string]any{"hi": 1}, "durable": true})
	require.NotEqual(t, "0", published["id"])
	require.NotEmpty(t, published["id"])
	l.assertPresence(t, s)
	l.assertResources(t, s, eventID, todoID)
}

// claimOne claims the one runnable todo of queue, returning its id and lease token.
func claimOne(t *testing.T, s *mcp.ClientSession, queue string) (id, lease string) {
	t.Helper()
	claimed := call(t, s, "claim_todo", map[string]any{"queue": queue, "wait_seconds": 1})["todos"].([]any)
	require.Len(t, claimed, 1)
	todo := claimed[0].(map[string]any)
	require.Equal(t, "TODO_STATE_RUNNING", todo["state"])
	require.NotEmpty(t, todo["lease_token"])
	return todo["id"].(string), todo["lease_token"].(string)
}

// assertPresence: presence lists the agent once it holds a subscription.
func (l *liveNode) assertPresence(t *testing.T, s *mcp.ClientSession) {
	t.Helper()
	rt := realtimev1.NewRealtimeServiceClient(dialAs(t, l.node, l.agent))
	_, err := rt.Subscribe(t.Context(), &realtimev1.SubscribeRequest{Channels: []string{"mcp-room"}})
	require.NoError(t, err)
	member := "agent:" + l.agentID
	require.Eventually(t, func() bool {
		res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "presence", Arguments: map[string]any{"channel": "mcp-room"}})
		if err != nil || res.IsError {
			return false
		}
		var p struct {
			Members []struct {
				Member string `json:"member"`
			} `json:"members"`
		}
		return json.Unmarshal([]byte(text(res)), &p) == nil && len(p.Members) == 1 && p.Members[0].Member == member
	}, 10*time.Second, 20*time.Millisecond, "presence never listed %s", member)
}

// assertResources: the templates are listed, and an event and a todo read
// by URI.
func (l *liveNode) assertResources(t *testing.T, s *mcp.ClientSession, eventID, todoID string) {
	t.Helper()
	templates, err := s.ListResourceTemplates(t.Context(), nil)
	require.NoError(t, err)
	var uris []string
	for _, rt := range templates.ResourceTemplates {
		uris = append(uris, rt.URITemplate)
	}
	require.ElementsMatch(t, []string{"switchboard://events/{id}", "switchboard://todos/{id}"}, uris)
	read := func(uri string) map[string]any {
		t.Helper()
		res, err := s.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
		require.NoError(t, err, uri)
		require.Len(t, res.Contents, 1)
		require.Equal(t, uri, res.Contents[0].URI)
		var out map[string]any
		require.NoError(t, json.Unmarshal([]byte(res.Contents[0].Text), &out))
		return out
	}
	require.Equal(t, "build.finished", read("switchboard://events/" + eventID)["topic"])
	require.Equal(t, "TODO_STATE_COMPLETED", read("switchboard://todos/" + todoID)["state"])
}

// A credential the API refuses is refused the same way through MCP: the
// same code and message as the RPC, as a tool error. Read-only may read
// but not claim (PERMISSION_DENIED); another tenant sees nothing
// (NOT_FOUND), by tool or by resource.
func TestDenialsAreTheAPIs(t *testing.T) {
	t.Parallel()
	l := startNode(t)
	_, todoID := l.seed(t, "mcp-q")
	id, err := strconv.ParseInt(todoID, 10, 64)
	require.NoError(t, err)

	reader := l.overHTTP(t, l.reader)
	require.Equal(t, todoID, call(t, reader, "get_todo", map[string]any{"id": todoID})["id"])
	_, rpcErr := queuev1.NewQueueServiceClient(dialAs(t, l.node, l.reader)).Claim(t.Context(),
		&queuev1.ClaimRequest{Queue: "mcp-q", WorkerId: "mcp"})
	require.Equal(t, "PERMISSION_DENIED: "+status.Convert(rpcErr).Message(),
		callFails(t, reader, "claim_todo", map[string]any{"queue": "mcp-q"}))

	stranger := l.overHTTP(t, l.stranger)
	_, rpcErr = queuev1.NewQueueServiceClient(dialAs(t, l.node, l.stranger)).GetTodo(t.Context(), &queuev1.GetTodoRequest{Id: id})
	require.Equal(t, "NOT_FOUND: "+status.Convert(rpcErr).Message(),
		callFails(t, stranger, "get_todo", map[string]any{"id": todoID}))
	_, err = stranger.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "switchboard://todos/" + todoID})
	require.ErrorContains(t, err, "NOT_FOUND")
	require.Empty(t, call(t, stranger, "list_todos", nil)["todos"])
}

// The bounds are in the schema: a claim may not wait past MaxClaimWait, and
// an id is a decimal string; the SDK refuses both before any RPC.
func TestArgumentsOutsideTheSchemaAreRefused(t *testing.T) {
	t.Parallel()
	l := startNode(t)
	s := l.overHTTP(t, l.agent)
	require.Contains(t, callFails(t, s, "claim_todo", map[string]any{"queue": "mcp-q", "wait_seconds": 60}), "wait_seconds")
	require.Contains(t, callFails(t, s, "get_todo", map[string]any{"id": "12; drop"}), "id")
	require.Contains(t, callFails(t, s, "list_todos", map[string]any{"page_size": 1000}), "page_size")
}

// Without a valid credential /mcp answers 401 before reading the body: the
// request announces a body it never sends, and the answer comes anyway.
func TestUnauthenticatedIsRefusedBeforeTheBody(t *testing.T) {
	t.Parallel()
	l := startNode(t)
	for name, authorization := range map[string]string{"no token": "", "bad token": "Bearer sbt_nope"} {
		conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", l.node.HTTPAddr())
		require.NoError(t, err)
		defer conn.Close()
		head := "POST /mcp HTTP/1.1\r\nHost: " + l.node.HTTPAddr() + "\r\nContent-Type: application/json\r\n" +
			"Accept: application/json, text/event-stream\r\nContent-Length: 100000\r\n"
		if authorization != "" {
			head += "Authorization: " + authorization + "\r\n"
		}
		_, err = conn.Write([]byte(head + "\r\n"))
		require.NoError(t, err)
		// Far less than the HTTP read timeout a body read would wait for.
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err, name)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, name)
		require.True(t, resp.Close, "%s: the connection is closed, its body unread", name)
	}
}

// A body over SWITCHBOARD_HTTP_MAX_BODY (4 MiB by default) is refused with
// 413 once the cap is read, never buffered whole.
func TestOversizedBodyIsRefused(t *testing.T) {
	t.Parallel()
	l := startNode(t)
	conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", l.node.HTTPAddr())
	require.NoError(t, err)
	defer conn.Close()
	const size = 5 << 20
	head := "POST /mcp HTTP/1.1\r\nHost: " + l.node.HTTPAddr() + "\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\nAuthorization: Bearer " + l.agent + "\r\n" +
		"Content-Length: " + strconv.Itoa(size) + "\r\n\r\n"
	written := make(chan struct{})
	go func() {
		defer close(written)
		// A write the node stopped reading fails once it closes: expected.
		_, _ = conn.Write(append([]byte(head), make([]byte, size)...))
	}()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	_ = conn.Close()
	<-written
}
