package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/protobuf/types/known/structpb"
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

// progressStruct is v as the Struct a heartbeat carries, checked as the
// server checks it (the same compact encoding/json form).
func progressStruct(v any) (*structpb.Struct, error) {
	if s, ok := v.(*structpb.Struct); ok {
		v = s.AsMap()
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("worker: progress: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("worker: progress must be a JSON object, got %.40s", raw)
	}
	if raw, err = json.Marshal(m); err != nil {
		return nil, fmt.Errorf("worker: progress: %w", err)
	}
	if len(raw) > MaxProgressBytes {
		return nil, fmt.Errorf("worker: progress is %d bytes of JSON, more than %d", len(raw), MaxProgressBytes)
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		return nil, fmt.Errorf("worker: progress: %w", err)
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
