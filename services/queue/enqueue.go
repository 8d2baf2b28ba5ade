package queue

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/textcheck"
	"github.com/switchboard/switchboard/pkg/tracing"
	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// maxBatch is the largest EnqueueBatch, Claim and batch lease call.
const maxBatch = 1000

// DefaultPriority is a todo's priority when its creator leaves it unset
// (0 most urgent, 4 least).
const DefaultPriority = 2

// Enqueue adds one todo. A dedupe_key already held in the queue (for how
// long: dedupe_scope, see dedupe.go) returns the todo that holds it with
// duplicate = true and writes nothing.
func (s *Server) Enqueue(ctx context.Context, req *queuev1.EnqueueRequest) (*queuev1.EnqueueResponse, error) {
	c, err := callerIn(ctx, req.GetQueue())
	if err != nil {
		return nil, err
	}
	item, err := newTodo("", req)
	if err != nil {
		return nil, err
	}
	res, err := s.enqueue(ctx, c, req.GetQueue(), []store.NewTodo{item})
	if err != nil {
		return nil, err
	}
	return &queuev1.EnqueueResponse{Todo: s.todoProto(res[0].Todo), Duplicate: res[0].Duplicate}, nil
}

// EnqueueBatch adds 1–1000 todos to one queue in one transaction (one
// INSERT for the whole batch); the first invalid entry fails the batch and
// is named by its index.
func (s *Server) EnqueueBatch(ctx context.Context, req *queuev1.EnqueueBatchRequest) (*queuev1.EnqueueBatchResponse, error) {
	c, err := callerIn(ctx, req.GetQueue())
	if err != nil {
		return nil, err
	}
	reqs := req.GetRequests()
	if len(reqs) == 0 || len(reqs) > maxBatch {
		return nil, invalid("requests", "must hold 1 to 1000 entries")
	}
	items := make([]store.NewTodo, len(reqs))
	for i, r := range reqs {
		prefix := fmt.Sprintf("requests[%d].", i)
		if r.GetQueue() != "" && r.GetQueue() != req.GetQueue() {
			return nil, invalid(prefix+"queue", "must be empty or equal to queue")
		}
		if items[i], err = newTodo(prefix, r); err != nil {
			return nil, err
		}
	}
	res, err := s.enqueue(ctx, c, req.GetQueue(), items)
	if err != nil {
		return nil, err
	}
	out := &queuev1.EnqueueBatchResponse{Responses: make([]*queuev1.EnqueueResponse, len(res))}
	for i, r := range res {
		out.Responses[i] = &queuev1.EnqueueResponse{Todo: s.todoProto(r.Todo), Duplicate: r.Duplicate}
	}
	return out, nil
}

// enqueue stores items and, after the commit, reports them and wakes
// claimers: this node's in-process, the others through a coalesced
// pg_notify (never inside the enqueue transaction).
func (s *Server) enqueue(ctx context.Context, c store.Caller, queue string, items []store.NewTodo) ([]store.Enqueued, error) {
	// Each todo carries the trace of the call that created it, so its
	// worker's span joins that trace (Todo.trace_parent).
	if tp := tracing.TraceParent(ctx); tp != "" {
		for i := range items {
			items[i].TraceParent = tp
		}
	}
	res, err := s.store.Enqueue(ctx, c, queue, items)
	if err != nil {
		return nil, err
	}
	created := 0
	for _, r := range res {
		if !r.Duplicate {
			created++
			s.todos.emit(EventEnqueued, r.Todo)
		}
	}
	if created > 0 {
		s.todos.announce(c.HumanID, queue, created)
	}
	return res, nil
}

// newTodo checks what protovalidate cannot (serialized payload size) and
// resolves the request's optional fields. prefix names a batch entry in
// errors ("requests[3].").
func newTodo(prefix string, r *queuev1.EnqueueRequest) (store.NewTodo, error) {
	payload, err := jsonObject(prefix+"payload", r.GetPayload())
	if err != nil {
		return store.NewTodo{}, err
	}
	n := store.NewTodo{
		EventID: r.GetEventId(), Kind: r.GetKind(), Payload: payload, Priority: DefaultPriority,
		MaxAttempts: r.GetMaxAttempts(), DedupeKey: r.GetDedupeKey(), ConcurrencyKey: r.GetConcurrencyKey(),
		RemoveOnComplete: r.GetRemoveOnComplete(),
	}
	if r != nil && r.Priority != nil { // nil (possible in-process) is an empty request
		n.Priority = r.GetPriority()
	}
	if n.Priority < 0 || n.Priority > 4 {
		return store.NewTodo{}, invalid(prefix+"priority", "must be between 0 and 4")
	}
	if n.MaxAttempts < 0 || n.MaxAttempts > 1000 {
		return store.NewTodo{}, invalid(prefix+"max_attempts", "must be between 1 and 1000, or 0 for the default")
	}
	if r.GetAgentId() != "" {
		id, err := uuid.Parse(r.GetAgentId())
		if err != nil {
			return store.NewTodo{}, invalid(prefix+"agent_id", "must be a valid UUID")
		}
		n.AgentID = &id
	}
	if r.GetEventId() < 0 {
		return store.NewTodo{}, invalid(prefix+"event_id", "must be ≥ 0")
	}
	if len(r.GetKind()) > 255 || len(r.GetDedupeKey()) > 255 {
		return store.NewTodo{}, invalid(prefix+"kind", "kind and dedupe_key must be at most 255 characters")
	}
	if err := textcheck.Label(r.GetKind()); err != nil { // read in the console and by workers: no bidi or invisible characters
		return store.NewTodo{}, invalid(prefix+"kind", err.Error())
	}
	if n.DedupeScope, n.DedupeWindow, err = dedupeScope(prefix, r); err != nil {
		return store.NewTodo{}, err
	}
	if utf8.RuneCountInString(r.GetConcurrencyKey()) > 255 {
		return store.NewTodo{}, invalid(prefix+"concurrency_key", "must be at most 255 characters")
	}
	if err := textcheck.Check(r.GetConcurrencyKey()); err != nil {
		return store.NewTodo{}, invalid(prefix+"concurrency_key", err.Error())
	}
	if ts := r.GetRunAt(); ts != nil {
		if err := ts.CheckValid(); err != nil {
			return store.NewTodo{}, invalid(prefix+"run_at", "must be a valid timestamp")
		}
		n.RunAt = ts.AsTime()
	} else {
		n.RunAt = time.Time{} // "unset means now()" on the database clock
	}
	return n, nil
}
