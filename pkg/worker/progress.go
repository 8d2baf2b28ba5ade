package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/protobuf/types/known/structpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// MaxProgressBytes is the largest progress the server stores: the JSON
// object, serialized compactly, at most 1 KiB (HeartbeatRequest.progress).
const MaxProgressBytes = 1 << 10

// ErrNotHandling is Progress's error for a context that is not a handler's.
var ErrNotHandling = errors.New("worker: the context is not a running handler's")

// leaseKey is the context key of the handler's lease.
type leaseKey struct{}

// Progress records v, which must marshal (encoding/json) to a JSON object of
// at most MaxProgressBytes, as the latest progress of the todo whose handler
// ctx is (or derives from). It does not call the server: the value is sent
// with the todo's next lease heartbeat (within Options.HeartbeatInterval),
// stored as Todo.progress and published as a todo.progress event on the
// realtime channels sys:queue:<queue> and sys:todo:<id>. Only the latest
// value is sent: calling Progress in a tight loop costs nothing on the
// server, since a heartbeat is one merged, HOT update per interval anyway
// and an RPC per call would multiply both the round trips and the writes.
// A value still unsent when the handler returns is dropped (its outcome
// follows), as is one whose heartbeat met a lost lease.
//
// The error is ErrNotHandling for a ctx without a handler, or says why v
// is no JSON object or is too large; nothing is recorded then.
func Progress(ctx context.Context, v any) error {
	l, ok := ctx.Value(leaseKey{}).(*lease)
	if !ok {
		return ErrNotHandling
	}
	p, err := progressStruct(v)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.progress = p
	return nil
}

// MaxResultBytes is the largest result the server stores: the JSON object,
// serialized, at most 1 MiB (CompleteRequest.result).
const MaxResultBytes = 1 << 20

// SetResult records v, which must marshal (encoding/json) to a JSON object
// of at most MaxResultBytes, as the result the todo whose handler ctx is (or
// derives from) completes with (Todo.result). It is sent with the
// completion when the handler returns nil, and dropped when it fails; a
// later call replaces an earlier one. The error is ErrNotHandling for a ctx
// without a handler, or says why v is no JSON object or is too large;
// nothing is recorded then.
func SetResult(ctx context.Context, v any) error {
	l, ok := ctx.Value(leaseKey{}).(*lease)
	if !ok {
		return ErrNotHandling
	}
	r, err := objectStruct("result", v, MaxResultBytes)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.result = r
	return nil
}

// completeRequest is the Complete of l's todo, with the handler's result.
func (l *lease) completeRequest() *queuev1.CompleteRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return &queuev1.CompleteRequest{Id: l.todo.GetId(), LeaseToken: l.todo.GetLeaseToken(), Result: l.result}
}

// progressStruct is v as the Struct a heartbeat carries, checked as the
// server checks it (the same compact encoding/json form).
func progressStruct(v any) (*structpb.Struct, error) {
	return objectStruct("progress", v, MaxProgressBytes)
}

// objectStruct is v as a Struct, checked as the server checks a JSON object
// field named what: an object, at most limit bytes in compact encoding/json.
func objectStruct(what string, v any, limit int) (*structpb.Struct, error) {
	if s, ok := v.(*structpb.Struct); ok {
		v = s.AsMap()
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("worker: %s: %w", what, err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("worker: %s must be a JSON object, got %.40s", what, raw)
	}
	if raw, err = json.Marshal(m); err != nil {
		return nil, fmt.Errorf("worker: %s: %w", what, err)
	}
	if len(raw) > limit {
		return nil, fmt.Errorf("worker: %s is %d bytes of JSON, more than %d", what, len(raw), limit)
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		return nil, fmt.Errorf("worker: %s: %w", what, err)
	}
	return s, nil
}

// takeProgress hands the unsent progress to a heartbeat (nil if none).
func (l *lease) takeProgress() *structpb.Struct {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.progress
	l.progress = nil
	return p
}

// untakeProgress gives back progress whose heartbeat got no answer, unless
// a newer value was recorded meanwhile.
func (l *lease) untakeProgress(p *structpb.Struct) {
	if p == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.progress == nil {
		l.progress = p
	}
}
