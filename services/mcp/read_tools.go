package mcp

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
)

// The read tools, one RPC each; the services decide what the credential
// may see (its tenant's rows; an agent's own and the tenant's shared ones).

type listEventsIn struct {
	Topic     string `json:"topic,omitempty" jsonschema:"only events with exactly this topic, e.g. build.finished"`
	Source    string `json:"source,omitempty" jsonschema:"only events from this source: publish, endpoint:<uuid> or adapter:<uuid>"`
	PageSize  int    `json:"page_size,omitempty" jsonschema:"events per page, 1-50 (default 20)"`
	PageToken string `json:"page_token,omitempty" jsonschema:"next_page_token of the previous page; omit for the first page"`
}

type idIn struct {
	ID string `json:"id" jsonschema:"the id as a decimal string, as results show it"`
}

type listTodosIn struct {
	Queue     string `json:"queue,omitempty" jsonschema:"only todos of this queue"`
	State     string `json:"state,omitempty" jsonschema:"only todos in this state"`
	PageSize  int    `json:"page_size,omitempty" jsonschema:"todos per page, 1-50 (default 20)"`
	PageToken string `json:"page_token,omitempty" jsonschema:"next_page_token of the previous page; omit for the first page"`
}

type queueIn struct {
	Queue string `json:"queue" jsonschema:"the queue's name"`
}

type listQueuesIn struct {
	PageSize  int    `json:"page_size,omitempty" jsonschema:"queues per page, 1-50 (default 20)"`
	PageToken string `json:"page_token,omitempty" jsonschema:"next_page_token of the previous page; omit for the first page"`
}

type channelIn struct {
	Channel string `json:"channel" jsonschema:"the realtime channel's name, e.g. orders or room/42"`
}

// todoStates are ListTodos' states by the names a model is given.
var todoStates = map[string]queuev1.TodoState{
	"pending": queuev1.TodoState_TODO_STATE_PENDING, "running": queuev1.TodoState_TODO_STATE_RUNNING,
	"completed": queuev1.TodoState_TODO_STATE_COMPLETED, "dead": queuev1.TodoState_TODO_STATE_DEAD,
	"cancelled": queuev1.TodoState_TODO_STATE_CANCELLED,
}

var readOnly = &mcp.ToolAnnotations{ReadOnlyHint: true}

func (s *server) addReadTools(m *mcp.Server) {
	pages := map[string]property{"page_size": between(1, MaxPageSize)}
	mcp.AddTool(m, &mcp.Tool{
		Name: "list_events", Annotations: readOnly,
		Description: "List stored events (webhook deliveries, adapter messages, published events), newest first, " +
			"without payloads (use get_event). Returns events and next_page_token (empty on the last page).",
		InputSchema: inputSchema[listEventsIn](map[string]property{
			"page_size": between(1, MaxPageSize),
			"source":    pattern(`^(publish|(endpoint|adapter):[0-9a-fA-F-]{36})$`),
		}),
	}, s.listEvents)
	mcp.AddTool(m, &mcp.Tool{
		Name: "get_event", Annotations: readOnly,
		Description: fmt.Sprintf("Get one event with its headers and payload: as text when it is UTF-8 (payload), "+
			"else base64 (payload_base64); cut at %d bytes with payload_truncated: true.", MaxFieldBytes),
		InputSchema: inputSchema[idIn](map[string]property{"id": pattern(idPattern)}),
	}, getTool(s.event))
	mcp.AddTool(m, &mcp.Tool{
		Name: "list_todos", Annotations: readOnly,
		Description: fmt.Sprintf("List todos (units of queued work), newest first. payload, result and progress "+
			"longer than %d bytes of JSON are cut (as a string, with <field>_truncated: true); get_todo shows more. "+
			"Returns todos and next_page_token (empty on the last page).", MaxListFieldBytes),
		InputSchema: inputSchema[listTodosIn](map[string]property{
			"page_size": between(1, MaxPageSize), "queue": pattern(queuePattern),
			"state": oneOf("pending", "running", "completed", "dead", "cancelled"),
		}),
	}, s.listTodos)
	mcp.AddTool(m, &mcp.Tool{
		Name: "get_todo", Annotations: readOnly,
		Description: fmt.Sprintf("Get one todo: state, attempts, errors per attempt, payload, result, progress, "+
			"its event_id and trace. Free-form fields over %d bytes of JSON are cut (<field>_truncated: true).", MaxFieldBytes),
		InputSchema: inputSchema[idIn](map[string]property{"id": pattern(idPattern)}),
	}, getTool(s.todo))
	mcp.AddTool(m, &mcp.Tool{
		Name: "queue_stats", Annotations: readOnly,
		Description: "One queue's depth by state (pending_ready, pending_scheduled, running, completed, dead, " +
			"cancelled), oldest pending age in seconds, whether it is paused, and its limits.",
		InputSchema: inputSchema[queueIn](map[string]property{"queue": pattern(queuePattern)}),
	}, s.queueStats)
	mcp.AddTool(m, &mcp.Tool{
		Name: "list_queues", Annotations: readOnly,
		Description: "List the queues by name, each with its depth by state and pause flag. " +
			"Returns queues and next_page_token (empty on the last page).",
		InputSchema: inputSchema[listQueuesIn](pages),
	}, s.listQueues)
	mcp.AddTool(m, &mcp.Tool{
		Name: "presence", Annotations: readOnly,
		Description: "Who is subscribed to a realtime channel right now, across the cluster: " +
			"one member per identity (agent:<uuid> or human:<uuid>) with its stream count and nodes.",
		InputSchema: inputSchema[channelIn](map[string]property{"channel": pattern(channelPattern)}),
	}, s.presence)
}

func (s *server) listEvents(ctx context.Context, req *mcp.CallToolRequest, in listEventsIn) (*mcp.CallToolResult, any, error) {
	resp, err := s.ingest.ListEvents(s.outgoing(ctx, req.Extra), &ingestv1.ListEventsRequest{
		Topic: in.Topic, Source: in.Source, PageSize: pageSize(in.PageSize), PageToken: in.PageToken,
	})
	if err != nil {
		return nil, nil, rpcError(err)
	}
	events := make([]map[string]any, 0, len(resp.GetEvents()))
	for _, e := range resp.GetEvents() {
		j, err := eventJSON(e, MaxListFieldBytes)
		if err != nil {
			return nil, nil, err
		}
		events = append(events, j)
	}
	return nil, map[string]any{"events": events, "next_page_token": resp.GetNextPageToken()}, nil
}

// getTool is the get_* tool over get, which the resource of the same rows
// (readResource) also serves, so both answer alike.
func getTool(get func(context.Context, *mcp.RequestExtra, string) (map[string]any, error)) mcp.ToolHandlerFor[idIn, any] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in idIn) (*mcp.CallToolResult, any, error) {
		v, err := get(ctx, req.Extra, in.ID)
		if err != nil {
			return nil, nil, err
		}
		return nil, v, nil
	}
}

// event is GetEvent rendered, for the tool and the resource.
func (s *server) event(ctx context.Context, extra *mcp.RequestExtra, rawID string) (map[string]any, error) {
	id, err := parseID("id", rawID)
	if err != nil {
		return nil, err
	}
	resp, err := s.ingest.GetEvent(s.outgoing(ctx, extra), &ingestv1.GetEventRequest{Id: id})
	if err != nil {
		return nil, rpcError(err)
	}
	return eventJSON(resp.GetEvent(), MaxFieldBytes)
}

func (s *server) listTodos(ctx context.Context, req *mcp.CallToolRequest, in listTodosIn) (*mcp.CallToolResult, any, error) {
	resp, err := s.queue.ListTodos(s.outgoing(ctx, req.Extra), &queuev1.ListTodosRequest{
		Queue: in.Queue, State: todoStates[in.State], PageSize: pageSize(in.PageSize), PageToken: in.PageToken,
	})
	if err != nil {
		return nil, nil, rpcError(err)
	}
	todos, err := todosJSON(resp.GetTodos(), MaxListFieldBytes)
	if err != nil {
		return nil, nil, err
	}
	return nil, map[string]any{"todos": todos, "next_page_token": resp.GetNextPageToken()}, nil
}

// todo is GetTodo rendered, for the tool and the resource.
func (s *server) todo(ctx context.Context, extra *mcp.RequestExtra, rawID string) (map[string]any, error) {
	id, err := parseID("id", rawID)
	if err != nil {
		return nil, err
	}
	resp, err := s.queue.GetTodo(s.outgoing(ctx, extra), &queuev1.GetTodoRequest{Id: id})
	if err != nil {
		return nil, rpcError(err)
	}
	return todoJSON(resp.GetTodo(), MaxFieldBytes)
}

func (s *server) queueStats(ctx context.Context, req *mcp.CallToolRequest, in queueIn) (*mcp.CallToolResult, any, error) {
	resp, err := s.queue.QueueStats(s.outgoing(ctx, req.Extra), &queuev1.QueueStatsRequest{Queue: in.Queue})
	if err != nil {
		return nil, nil, rpcError(err)
	}
	out, err := jsonOf(resp)
	return nil, out, err
}

func (s *server) listQueues(ctx context.Context, req *mcp.CallToolRequest, in listQueuesIn) (*mcp.CallToolResult, any, error) {
	resp, err := s.queue.ListQueues(s.outgoing(ctx, req.Extra), &queuev1.ListQueuesRequest{
		PageSize: pageSize(in.PageSize), PageToken: in.PageToken,
	})
	if err != nil {
		return nil, nil, rpcError(err)
	}
	out, err := jsonOf(resp)
	return nil, out, err
}

func (s *server) presence(ctx context.Context, req *mcp.CallToolRequest, in channelIn) (*mcp.CallToolResult, any, error) {
	resp, err := s.realtime.Presence(s.outgoing(ctx, req.Extra), &realtimev1.PresenceRequest{Channel: in.Channel})
	if err != nil {
		return nil, nil, rpcError(err)
	}
	out, err := jsonOf(resp)
	return nil, out, err
}
