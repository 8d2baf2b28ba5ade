package queue

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/structjson"
	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// maxJSONBytes is the limit on a payload or result, "at most 1 MiB
// serialized".
const maxJSONBytes = 1 << 20

// maxErrorChars is how much of an error message is stored.
const maxErrorChars = 4096

// jsonObject serializes a Struct field (nil = {}) and enforces the size
// limit, which protovalidate cannot measure. encoding/json over AsMap gives
// compact, deterministic output, so the limit does not wobble by a byte.
// Over the limit is INVALID_ARGUMENT, as the contract lists for a bad field.
func jsonObject(field string, m *structpb.Struct) ([]byte, error) {
	if m == nil {
		return []byte(`{}`), nil
	}
	v := m.AsMap()
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, invalid(field, "must be representable as JSON (no NaN or infinite numbers)")
	}
	if len(raw) > maxJSONBytes {
		return nil, invalid(field, fmt.Sprintf("must be at most 1 MiB serialized (got %d bytes)", len(raw)))
	}
	if hasNUL(v) {
		// PostgreSQL's jsonb cannot store U+0000; without this check the
		// insert would fail as an internal error.
		return nil, invalid(field, `must not contain the character U+0000 in any key or string`)
	}
	return raw, nil
}

// hasNUL reports whether any key or string inside a JSON value holds U+0000.
func hasNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, 0)
	case map[string]any:
		for k, x := range v {
			if strings.ContainsRune(k, 0) || hasNUL(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if hasNUL(x) {
				return true
			}
		}
	}
	return false
}

// truncate keeps the first n characters (runes) of s.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

var stateNames = map[string]queuev1.TodoState{
	"pending":   queuev1.TodoState_TODO_STATE_PENDING,
	"running":   queuev1.TodoState_TODO_STATE_RUNNING,
	"completed": queuev1.TodoState_TODO_STATE_COMPLETED,
	"dead":      queuev1.TodoState_TODO_STATE_DEAD,
	"cancelled": queuev1.TodoState_TODO_STATE_CANCELLED,
}

// stateColumn is the todos.state value of a defined, specified TodoState.
func stateColumn(st queuev1.TodoState) (string, bool) {
	for name, v := range stateNames {
		if v == st {
			return name, true
		}
	}
	return "", false
}

// todoError is one element of todos.errors.
type todoError struct {
	Attempt int32     `json:"attempt"`
	At      time.Time `json:"at"`
	Error   string    `json:"error"`
}

// todoProto renders a todo. The JSON columns are written only by this
// service (objects and arrays by CHECK or construction), so an error means
// a corrupt row.
func todoProto(t store.Todo) (*queuev1.Todo, error) {
	payload, err := structjson.FromJSON(t.Payload)
	if err != nil {
		return nil, fmt.Errorf("todo %d payload: %w", t.ID, err)
	}
	var result *structpb.Struct
	if len(t.Result) > 0 {
		if result, err = structjson.FromJSON(t.Result); err != nil {
			return nil, fmt.Errorf("todo %d result: %w", t.ID, err)
		}
	}
	var errs []todoError
	if string(t.Errors) != "[]" { // most todos never failed
		if err := json.Unmarshal(t.Errors, &errs); err != nil {
			return nil, fmt.Errorf("todo %d errors: %w", t.ID, err)
		}
	}
	out := &queuev1.Todo{
		Id: t.ID, HumanId: t.HumanID.String(), Queue: t.Queue, Kind: t.Kind, Payload: payload,
		Priority: int32(t.Priority), State: stateNames[t.State], Attempt: t.Attempt, MaxAttempts: t.MaxAttempts,
		RunAt: timestamppb.New(t.RunAt), LeaseExpiresAt: timestamp(t.LeaseExpiresAt),
		CreatedAt: timestamppb.New(t.CreatedAt), AttemptedAt: timestamp(t.AttemptedAt), FinishedAt: timestamp(t.FinishedAt),
		Result: result, LeaseExpiries: t.LeaseExpiries,
	}
	if t.AgentID != nil {
		out.AgentId = t.AgentID.String()
	}
	if t.EventID != nil {
		out.EventId = *t.EventID
	}
	if t.LeaseOwner != nil {
		out.LeaseOwner = *t.LeaseOwner
	}
	if t.LastError != nil {
		out.LastError = *t.LastError
	}
	if t.DedupeKey != nil {
		out.DedupeKey = *t.DedupeKey
	}
	for _, e := range errs {
		out.Errors = append(out.Errors, &queuev1.TodoError{Attempt: e.Attempt, At: timestamppb.New(e.At), Error: e.Error})
	}
	return out, nil
}

// todoProtos renders todos in order.
func todoProtos(ts []store.Todo) ([]*queuev1.Todo, error) {
	out := make([]*queuev1.Todo, len(ts))
	for i, t := range ts {
		var err error
		if out[i], err = todoProto(t); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// timestamp renders an optional time; nil stays unset.
func timestamp(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}
