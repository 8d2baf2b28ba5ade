package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// How big a result may get. A model reads every byte of a tool result, so
// each is bounded: pages are capped and the free-form fields (an event's
// payload, a todo's payload, result and progress) are cut at a documented
// size, with "<field>_truncated": true saying so. The whole value is one
// GetEvent or GetTodo away over the REST or gRPC API.
const (
	// MaxPageSize caps every list tool's page; DefaultPageSize is its default.
	MaxPageSize     = 50
	DefaultPageSize = 20
	// MaxFieldBytes bounds a free-form field of one event or todo
	// (get_event, get_todo, the work tools, the resources).
	MaxFieldBytes = 16 << 10
	// MaxListFieldBytes bounds the same fields in a list, whose page holds
	// up to MaxPageSize of them.
	MaxListFieldBytes = 1 << 10
)

// jsonOf renders m as protobuf's JSON mapping (proto field names; 64-bit
// integers as decimal strings, which JSON numbers could not hold exactly)
// decoded into a map, so fields can be bounded.
func jsonOf(m proto.Message) (map[string]any, error) {
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("render %T: %w", m, err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("render %T: %w", m, err)
	}
	return out, nil
}

// eventJSON is an event with its payload as text when it is UTF-8
// ("payload"), else base64 ("payload_base64"), cut at limit bytes.
func eventJSON(e *ingestv1.Event, limit int) (map[string]any, error) {
	payload := e.GetPayload()
	// Rendered without its payload, which is added cut below: e is the
	// caller's own message, lent for the call and given back whole.
	e.Payload = nil
	out, err := jsonOf(e)
	e.Payload = payload
	if err != nil || len(payload) == 0 {
		return out, err
	}
	cut := len(payload) > limit
	if cut {
		payload = payload[:limit]
	}
	if utf8.Valid(payload) || cut && utf8.Valid(trimPartialRune(payload)) {
		out["payload"] = string(trimPartialRune(payload))
	} else {
		out["payload_base64"] = base64.StdEncoding.EncodeToString(payload)
	}
	if cut {
		out["payload_truncated"] = true
	}
	return out, nil
}

// trimPartialRune drops an incomplete UTF-8 sequence a cut left at the end.
func trimPartialRune(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
		if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
			return b
		}
		b = b[:len(b)-1]
	}
	return b
}

// todoJSON is a todo with each free-form field (payload, result,
// progress) whose JSON exceeds limit bytes replaced by the first limit
// bytes of that JSON, as a string. Those fields are rendered on their own
// and only as far as the limit (boundedJSON), never whole: each may be a
// megabyte of which a list shows one kilobyte.
func todoJSON(t *queuev1.Todo, limit int) (map[string]any, error) {
	fields := []struct {
		name string
		v    **structpb.Struct
	}{{"payload", &t.Payload}, {"result", &t.Result}, {"progress", &t.Progress}}
	// t is the caller's own message, lent for the call: rendered without
	// the three, which are given back before anything returns.
	held := make([]*structpb.Struct, len(fields))
	for i, f := range fields {
		held[i], *f.v = *f.v, nil
	}
	out, err := jsonOf(t)
	for i, f := range fields {
		*f.v = held[i]
	}
	if err != nil {
		return nil, err
	}
	for i, f := range fields {
		if held[i] == nil {
			continue
		}
		b, over, err := boundedJSON(held[i], limit)
		if err != nil {
			return nil, fmt.Errorf("render todo %s: %w", f.name, err)
		}
		if over {
			out[f.name] = string(trimPartialRune(b[:limit]))
			out[f.name+"_truncated"] = true
			continue
		}
		out[f.name] = held[i].AsMap()
	}
	return out, nil
}

// todosJSON renders a page of todos.
func todosJSON(ts []*queuev1.Todo, limit int) ([]map[string]any, error) {
	out := make([]map[string]any, 0, len(ts))
	for _, t := range ts {
		m, err := todoJSON(t, limit)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// rpcError is what a tool reports for a failed RPC: the gRPC status code's
// canonical name (PERMISSION_DENIED) and the service's message, which the services already keep free of
// internal detail (an INTERNAL status says only that). The model sees it
// as a tool error, not a protocol error, so it can correct itself.
func rpcError(err error) error {
	st := status.Convert(err)
	return fmt.Errorf("%s: %s", code.Code(st.Code()), st.Message()) //nolint:gosec // gRPC codes are small
}

// parseID reads a decimal id or lease token as the results show it.
func parseID(field, s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("INVALID_ARGUMENT: %s must be a positive decimal integer, got %q", field, s)
	}
	return n, nil
}

// pageSize is n within [1, MaxPageSize], DefaultPageSize for 0.
func pageSize(n int) int32 {
	switch {
	case n <= 0:
		return DefaultPageSize
	case n > MaxPageSize:
		return MaxPageSize
	}
	return int32(n) //nolint:gosec // bounded above
}
