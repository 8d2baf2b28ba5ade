package queue

import (
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// listFilterMore resolves ListTodos' kind, event and creation-time filters
// into f. protovalidate checks them at the edge; they are checked here too
// for callers that reach the server without it (tests, in-process).
func listFilterMore(req *queuev1.ListTodosRequest, f *store.ListFilter) error {
	if k := req.GetKind(); k != "" {
		if len(k) > 255 {
			return invalid("kind", "must be at most 255 characters")
		}
		f.Kind = &k
	}
	if req.GetEventId() < 0 {
		return invalid("event_id", "must be ≥ 0")
	}
	f.EventID = req.GetEventId()
	var err error
	if f.CreatedAfter, err = optionalTime(req.GetCreatedAfter(), "created_after"); err != nil {
		return err
	}
	if f.CreatedBefore, err = optionalTime(req.GetCreatedBefore(), "created_before"); err != nil {
		return err
	}
	if f.CreatedAfter != nil && f.CreatedBefore != nil && f.CreatedAfter.After(*f.CreatedBefore) {
		return invalid("created_after", "must not be later than created_before")
	}
	return nil
}

// optionalTime is a request's optional timestamp: nil when unset.
func optionalTime(ts *timestamppb.Timestamp, field string) (*time.Time, error) {
	if ts == nil {
		return nil, nil
	}
	if !ts.IsValid() {
		return nil, invalid(field, "must be a valid timestamp")
	}
	t := ts.AsTime()
	return &t, nil
}

// listScope is the filters a page token binds: a token continues only the
// listing it was issued for. Times are written in nanoseconds since the
// epoch, so two spellings of one instant bind the same token.
func listScope(req *queuev1.ListTodosRequest) string {
	parts := []string{req.GetQueue(), req.GetState().String(), req.GetAgentId()}
	if k := req.GetKind(); k != "" {
		parts = append(parts, "k="+k)
	}
	if e := req.GetEventId(); e > 0 {
		parts = append(parts, "e="+strconv.FormatInt(e, 10))
	}
	if a := req.GetCreatedAfter(); a != nil {
		parts = append(parts, "a="+strconv.FormatInt(a.AsTime().UnixNano(), 10))
	}
	if b := req.GetCreatedBefore(); b != nil {
		parts = append(parts, "b="+strconv.FormatInt(b.AsTime().UnixNano(), 10))
	}
	return strings.Join(parts, "|")
}
