package queue

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"
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
	return jsonObjectWithin(field, m, maxJSONBytes, "1 MiB")
}

// jsonObjectWithin is jsonObject with limit bytes (named as limitText in
// the error).
func jsonObjectWithin(field string, m *structpb.Struct, limit int, limitText string) ([]byte, error) {
	if m == nil {
		return []byte(`{}`), nil
	}
	v := m.AsMap()
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, invalid(field, "must be representable as JSON (no NaN or infinite numbers)")
	}
	if len(raw) > limit {
		return nil, invalid(field, fmt.Sprintf("must be at most %s serialized (got %d bytes)", limitText, len(raw)))
	}
	return raw, nil
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

// renderTodo renders a todo. Its JSON columns are written only by this
// service (objects and arrays by CHECK or construction, nesting capped by
// the request guard), so an error means a row that cannot be delivered:
// stored before the cap, written around the API, or corrupt. Then it still
// returns everything else, with the JSON fields it could not render unset,
// and an *undeliverableError saying why.
func renderTodo(t store.Todo) (*queuev1.Todo, error) {
	out := &queuev1.Todo{
		Id: t.ID, HumanId: t.HumanID.String(), Queue: t.Queue, Kind: t.Kind,
		Priority: int32(t.Priority), State: stateNames[t.State], Attempt: t.Attempt, MaxAttempts: t.MaxAttempts,
		RunAt: timestamppb.New(t.RunAt), LeaseExpiresAt: timestamp(t.LeaseExpiresAt),
		CreatedAt: timestamppb.New(t.CreatedAt), AttemptedAt: timestamp(t.AttemptedAt), FinishedAt: timestamp(t.FinishedAt),
		LeaseExpiries: t.LeaseExpiries, RemoveOnComplete: t.RemoveOnComplete,
		EventId: orZero(t.EventID), LeaseOwner: orZero(t.LeaseOwner), LastError: orZero(t.LastError),
		DedupeKey: orZero(t.DedupeKey), TraceParent: orZero(t.TraceParent), ConcurrencyKey: orZero(t.ConcurrencyKey),
	}
	if t.AgentID != nil {
		out.AgentId = t.AgentID.String()
	}
	var bad []string
	var err error
	if out.Payload, err = structjson.FromJSON(t.Payload); err != nil {
		bad = append(bad, "payload: "+err.Error())
	}
	if len(t.Result) > 0 {
		if out.Result, err = structjson.FromJSON(t.Result); err != nil {
			bad = append(bad, "result: "+err.Error())
		}
	}
	if len(t.Progress) > 0 {
		if out.Progress, err = structjson.FromJSON(t.Progress); err != nil {
			bad = append(bad, "progress: "+err.Error())
		}
		out.ProgressAt = timestamp(t.ProgressAt)
	}
	if string(t.Errors) != "[]" { // most todos never failed
		var errs []todoError
		if err := json.Unmarshal(t.Errors, &errs); err != nil {
			bad = append(bad, "errors: "+err.Error())
		}
		for _, e := range errs {
			out.Errors = append(out.Errors, &queuev1.TodoError{Attempt: e.Attempt, At: timestamppb.New(e.At), Error: e.Error})
		}
	}
	if len(bad) > 0 {
		return out, &undeliverableError{id: t.ID, reason: strings.Join(bad, "; ")}
	}
	return out, nil
}

// undeliverableError names a stored todo that cannot be handed to a client
// whole, and why.
type undeliverableError struct {
	id     int64
	reason string
}

func (e *undeliverableError) Error() string {
	return fmt.Sprintf("todo %d cannot be delivered: %s", e.id, e.reason)
}

// todoProto renders a todo for a read or an answer other than a claim: a
// todo that cannot be delivered whole is rendered without the fields it
// cannot render (and logged), so one such row never fails a listing or an
// answer that holds it.
func (s *Server) todoProto(t store.Todo) *queuev1.Todo {
	out, err := renderTodo(t)
	if err != nil {
		s.log.Warn("rendering a todo without the JSON it cannot deliver", zap.Int64("todo_id", t.ID), zap.Error(err))
	}
	return out
}

// todoProtos renders todos in order, as todoProto.
func (s *Server) todoProtos(ts []store.Todo) []*queuev1.Todo {
	out := make([]*queuev1.Todo, len(ts))
	for i, t := range ts {
		out[i] = s.todoProto(t)
	}
	return out
}

// orZero renders an optional column as its proto field: NULL is the
// field's zero value, which proto3 leaves unset.
func orZero[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// timestamp renders an optional time; nil stays unset.
func timestamp(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}
