package queue

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// Cancel moves a PENDING or RUNNING todo to CANCELLED.
func (s *Server) Cancel(ctx context.Context, req *queuev1.CancelRequest) (*queuev1.CancelResponse, error) {
	c, err := callerOf(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	if len([]rune(req.GetReason())) > maxErrorChars {
		return nil, invalid("reason", "must be at most 4096 characters")
	}
	pt, err := s.changed(EventCancelled)(s.store.Cancel(ctx, c, req.GetId(), req.GetReason()))
	return apierr.Reply(&queuev1.CancelResponse{Todo: pt}, err)
}

// GetTodo returns one todo of the caller's tenant (for an agent: addressed
// to it or to no agent).
func (s *Server) GetTodo(ctx context.Context, req *queuev1.GetTodoRequest) (*queuev1.GetTodoResponse, error) {
	c, err := callerOf(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	pt, err := s.rendered(s.store.Get(ctx, c, req.GetId()))
	return apierr.Reply(&queuev1.GetTodoResponse{Todo: pt}, err)
}

// Page sizes: "0–1000; 0 means 100".
const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

// pageToken is the keyset position a listing continues from (the last id
// returned) plus the filters it was issued for. base64url JSON: opaque but
// not secret, because it only positions the scan; tenancy is applied in SQL
// on every page, so a forged token never reaches another tenant's rows.
type pageToken struct {
	BeforeID int64  `json:"b"`
	Scope    string `json:"s"`
}

// ListTodos lists todos newest first with keyset pagination on id.
func (s *Server) ListTodos(ctx context.Context, req *queuev1.ListTodosRequest) (*queuev1.ListTodosResponse, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	f, scope, err := listFilter(req)
	if err != nil {
		return nil, err
	}
	if f.BeforeID, err = decodePageToken(req.GetPageToken(), scope); err != nil {
		return nil, err
	}
	limit := f.Limit
	f.Limit = limit + 1 // one extra row says whether another page exists
	rows, err := s.store.List(ctx, c, f)
	if err != nil {
		return nil, err
	}
	out := &queuev1.ListTodosResponse{}
	if int32(len(rows)) > limit { //nolint:gosec // len ≤ 1001
		rows = rows[:limit]
		raw, _ := json.Marshal(pageToken{BeforeID: rows[len(rows)-1].ID, Scope: scope}) // plain fields: cannot fail
		out.NextPageToken = base64.RawURLEncoding.EncodeToString(raw)
	}
	out.Todos = s.todoProtos(rows)
	return out, nil
}

// listFilter resolves ListTodos' filters and the scope a page token binds.
func listFilter(req *queuev1.ListTodosRequest) (store.ListFilter, string, error) {
	f := store.ListFilter{Limit: req.GetPageSize()}
	switch {
	case f.Limit == 0:
		f.Limit = defaultPageSize
	case f.Limit < 0 || f.Limit > maxPageSize:
		return f, "", invalid("page_size", "must be between 0 and 1000")
	}
	if q := req.GetQueue(); q != "" {
		f.Queue = &q
	}
	if st := req.GetState(); st != queuev1.TodoState_TODO_STATE_UNSPECIFIED {
		name, ok := stateColumn(st)
		if !ok {
			return f, "", invalid("state", "must be a defined TodoState")
		}
		f.State = &name
	}
	if a := req.GetAgentId(); a != "" {
		id, err := uuid.Parse(a)
		if err != nil {
			return f, "", invalid("agent_id", "must be a valid UUID")
		}
		f.AgentID = &id
	}
	if err := listFilterMore(req, &f); err != nil {
		return f, "", err
	}
	return f, listScope(req), nil
}

// decodePageToken returns the id a token continues before; nil for none.
func decodePageToken(tok, scope string) (*int64, error) {
	if tok == "" {
		return nil, nil
	}
	bad := invalid("page_token", "is not a token returned by ListTodos")
	if len(tok) > 1024 {
		return nil, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	var pt pageToken
	if err != nil || json.Unmarshal(raw, &pt) != nil || pt.BeforeID <= 0 {
		return nil, bad
	}
	if pt.Scope != scope {
		return nil, invalid("page_token", "was issued for different filters")
	}
	return &pt.BeforeID, nil
}

// Redrive moves DEAD todos of a queue back to PENDING: the listed ids, or
// (ids empty) up to limit of the queue's dead todos, oldest first (0 = all).
func (s *Server) Redrive(ctx context.Context, req *queuev1.RedriveRequest) (*queuev1.RedriveResponse, error) {
	c, err := callerIn(ctx, req.GetQueue())
	if err != nil {
		return nil, err
	}
	switch {
	case len(req.GetIds()) > maxBatch:
		return nil, invalid("ids", "must hold at most 1000 ids")
	case req.GetLimit() < 0 || req.GetLimit() > 1_000_000:
		return nil, invalid("limit", "must be between 0 and 1000000")
	}
	var n int64
	if ids := req.GetIds(); len(ids) > 0 {
		for i, id := range ids {
			if id <= 0 {
				return nil, invalid(itemPrefixIDs(i), "must be ≥ 1")
			}
		}
		moved, err := s.store.RedriveIDs(ctx, c, req.GetQueue(), ids)
		if err != nil {
			return nil, err
		}
		n = int64(len(moved))
		for _, id := range moved {
			s.todos.emitEvent(TodoEvent{Kind: EventRedriven, TodoID: id, HumanID: c.HumanID, Queue: req.GetQueue(), State: "pending"})
		}
	} else if n, err = s.store.RedriveQueue(ctx, c, req.GetQueue(), int64(req.GetLimit())); err != nil {
		return nil, err
	}
	if n > 0 {
		s.todos.announce(c.HumanID, req.GetQueue(), int(min(n, maxBatch)))
	}
	return &queuev1.RedriveResponse{RedrivenCount: n}, nil
}

func itemPrefixIDs(i int) string { return fmt.Sprintf("ids[%d]", i) }

// RetryTodo makes a PENDING todo that waits (a retry's backoff, a future
// run_at) due now and wakes its queue's claimers as an Enqueue would. A
// PENDING todo already due is answered unchanged, with no event.
func (s *Server) RetryTodo(ctx context.Context, req *queuev1.RetryTodoRequest) (*queuev1.RetryTodoResponse, error) {
	c, err := callerOf(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	t, changed, err := s.store.RetryNow(ctx, c, req.GetId())
	if err != nil {
		return nil, err
	}
	if changed {
		s.todos.emit(EventRetried, t)
		s.todos.announce(t.HumanID, t.Queue, 1)
	}
	return &queuev1.RetryTodoResponse{Todo: s.todoProto(t)}, nil
}
