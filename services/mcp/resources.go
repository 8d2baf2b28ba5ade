package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The resources: an event and a todo by URI, read through the same RPCs
// (and bounds) as get_event and get_todo.

const (
	// EventURIPrefix + an event's id is the event's resource URI.
	EventURIPrefix = "switchboard://events/"
	// TodoURIPrefix + a todo's id is the todo's resource URI.
	TodoURIPrefix = "switchboard://todos/"
)

func (s *server) addResources(m *mcp.Server) {
	m.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "event", Title: "Switchboard event", MIMEType: "application/json", URITemplate: EventURIPrefix + "{id}",
		Description: "A stored event with its headers and payload, as get_event returns it.",
	}, s.readResource(EventURIPrefix, s.event))
	m.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "todo", Title: "Switchboard todo", MIMEType: "application/json", URITemplate: TodoURIPrefix + "{id}",
		Description: "A todo with its state, attempts, errors, payload and result, as get_todo returns it.",
	}, s.readResource(TodoURIPrefix, s.todo))
}

// readResource serves the URIs prefix+id with get.
func (s *server) readResource(prefix string, get func(context.Context, *mcp.RequestExtra, string) (map[string]any, error)) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		id, ok := strings.CutPrefix(uri, prefix)
		if !ok {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		v, err := get(ctx, req.Extra, id)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", uri, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", uri, err)
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
	}
}
