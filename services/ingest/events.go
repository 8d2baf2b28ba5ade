package ingest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/textcheck"
	"github.com/switchboard/switchboard/pkg/tracing"
	"github.com/switchboard/switchboard/services/ingest/internal/store"
)

// sourcePublish is the dedup scope of PublishEvent.
const sourcePublish = "publish"

// PublishEvent stores a producer's event and, when a queue is named, its
// todo, in one transaction; a delivery id stored before returns the stored
// event with duplicate = true and writes nothing.
func (s *Server) PublishEvent(ctx context.Context, req *ingestv1.PublishEventRequest) (*ingestv1.PublishEventResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkPublish(req); err != nil {
		return nil, err
	}
	target := store.Target{Queue: req.GetQueue(), Kind: req.GetTopic(), Payload: []byte(`{}`)}
	if id := req.GetAgentId(); id != "" {
		agent, err := uuid.Parse(id)
		if err != nil {
			return nil, apierr.Invalid(apierr.FieldViolation{Field: "agent_id", Description: "must be a uuid"})
		}
		belongs, err := s.store.AgentBelongs(ctx, p.HumanID, agent)
		if err != nil {
			return nil, err
		}
		if !belongs {
			return nil, apierr.NotFound("agent %s not found", agent)
		}
		target.AgentID = &agent
	}
	headers := make(map[string]string, len(req.GetHeaders()))
	for k, v := range req.GetHeaders() {
		headers[strings.ToLower(k)] = v
	}
	e := store.Event{
		HumanID: p.HumanID, Source: sourcePublish, PublishedBy: p.AgentID, AgentID: publishedFor(p, req.GetQueue(), target),
		Topic: req.GetTopic(), DeliveryID: req.GetDeliveryId(), Headers: headers, ContentType: req.GetContentType(),
		Payload: req.GetPayload(), TraceParent: tracing.TraceParent(ctx),
	}
	stored, err := ingestOne(ctx, s.store, e, target)
	if err != nil {
		return nil, err
	}
	if stored.Duplicate {
		row, err := s.store.EventByDelivery(ctx, readerOf(p), sourcePublish, req.GetDeliveryId())
		if errors.Is(err, store.ErrNoEvent) {
			// Stored by a publisher whose events this caller may not read
			// (another agent of the tenant): it learns that the id is
			// taken, which the shared dedup scope cannot hide, and nothing
			// of the event.
			return nil, apierr.AlreadyExists("delivery_id %q was already published by another publisher of this tenant", req.GetDeliveryId())
		}
		if err != nil {
			return nil, err
		}
		return &ingestv1.PublishEventResponse{Event: eventProto(row, true), Duplicate: true}, nil
	}
	s.received(e, stored)
	row, err := s.store.GetEvent(ctx, readerOf(p), stored.EventID)
	if err != nil {
		return nil, err
	}
	return &ingestv1.PublishEventResponse{Event: eventProto(row, true), TodoId: stored.TodoID()}, nil
}

// publishedFor is the agent a published event is for (events.agent_id):
// like its todo, the agent_id it names, or nobody (the tenant's shared work,
// which every agent may claim and so read); an event without a todo is the
// publishing agent's (nil for a human's credential).
func publishedFor(p auth.Principal, queue string, t store.Target) *uuid.UUID {
	if queue != "" {
		return t.AgentID
	}
	return p.AgentID
}

// principal is the caller the auth interceptor verified; a call without one
// (the interceptor not installed) is refused rather than served as nobody.
func principal(ctx context.Context) (auth.Principal, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return p, fmt.Errorf("ingest: no verified principal: %w", apierr.ErrUnauthenticated)
	}
	return p, nil
}

// readerOf is who p reads events as: its tenant, and the agent it acts as.
func readerOf(p auth.Principal) store.Reader {
	return store.Reader{HumanID: p.HumanID, AgentID: p.AgentID}
}

// checkPublish repeats the contract's bounds (protovalidate checks them in
// the interceptor; the handler must be safe without it).
func checkPublish(req *ingestv1.PublishEventRequest) error {
	switch {
	case req.GetTopic() == "" || len(req.GetTopic()) > 255:
		return apierr.Invalid(apierr.FieldViolation{Field: "topic", Description: "must be 1 to 255 characters"})
	case len(req.GetPayload()) > 1<<20:
		return apierr.Invalid(apierr.FieldViolation{Field: "payload", Description: "must be at most 1 MiB"})
	case len(req.GetDeliveryId()) > 255:
		return apierr.Invalid(apierr.FieldViolation{Field: "delivery_id", Description: "must be at most 255 characters"})
	case len(req.GetHeaders()) > 100:
		return apierr.Invalid(apierr.FieldViolation{Field: "headers", Description: "must hold at most 100 entries"})
	}
	if err := textcheck.Label(req.GetTopic()); err != nil { // routed on and read in the console: no bidi or invisible characters
		return apierr.Invalid(apierr.FieldViolation{Field: "topic", Description: err.Error()})
	}
	return nil
}

// GetEvent returns one of the caller's events, payload included. For an
// agent's credential another agent's event is NOT_FOUND, like a missing one.
func (s *Server) GetEvent(ctx context.Context, req *ingestv1.GetEventRequest) (*ingestv1.GetEventResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if req.GetId() <= 0 {
		return nil, apierr.Invalid(apierr.FieldViolation{Field: "id", Description: "must be ≥ 1"})
	}
	row, err := s.store.GetEvent(ctx, readerOf(p), req.GetId())
	if errors.Is(err, store.ErrNoEvent) {
		return nil, apierr.NotFound("event %d not found", req.GetId())
	}
	if err != nil {
		return nil, err
	}
	return &ingestv1.GetEventResponse{Event: eventProto(row, true)}, nil
}

// maxListBytes keeps a ListEvents page with payloads under gRPC's 4 MiB
// message limit, with room for the rest of each event.
const maxListBytes = 3 << 20

// ListEvents lists the caller's events newest first (for an agent's
// credential, those GetEvent would return), one keyset page at a time
// (page_token is the last id seen, opaque to clients).
func (s *Server) ListEvents(ctx context.Context, req *ingestv1.ListEventsRequest) (*ingestv1.ListEventsResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	f, err := listFilter(readerOf(p), req)
	if err != nil {
		return nil, err
	}
	pageSize := f.Limit
	f.Limit++ // one more tells whether there is a next page
	rows, err := s.store.ListEvents(ctx, f)
	if err != nil {
		return nil, err
	}
	out := &ingestv1.ListEventsResponse{}
	size := 0
	for i, r := range rows {
		if int32(i) == pageSize {
			out.NextPageToken = pageToken(rows[i-1].ID)
			break
		}
		ev := eventProto(r, f.IncludePayload)
		if f.IncludePayload {
			if len(r.Payload) > maxListBytes {
				ev.Payload = nil // too big for any page: GetEvent has it
			}
			if size += proto.Size(ev); size > maxListBytes && i > 0 {
				out.NextPageToken = pageToken(rows[i-1].ID)
				break
			}
		}
		out.Events = append(out.Events, ev)
	}
	return out, nil
}

func listFilter(r store.Reader, req *ingestv1.ListEventsRequest) (store.EventFilter, error) {
	f := store.EventFilter{Reader: r, Source: req.GetSource(), Topic: req.GetTopic(), IncludePayload: req.GetIncludePayload(), Limit: req.GetPageSize()}
	switch {
	case f.Limit < 0 || f.Limit > 1000:
		return f, apierr.Invalid(apierr.FieldViolation{Field: "page_size", Description: "must be between 0 and 1000"})
	case f.Limit == 0:
		f.Limit = 100
	}
	if id := req.GetEndpointId(); id != "" {
		u, err := uuid.Parse(id)
		if err != nil {
			return f, apierr.Invalid(apierr.FieldViolation{Field: "endpoint_id", Description: "must be a uuid"})
		}
		f.EndpointID = &u
	}
	var err error
	if f.ReceivedAfter, f.ReceivedBefore, err = receivedRange(req.GetReceivedAfter(), req.GetReceivedBefore()); err != nil {
		return f, err
	}
	switch st := req.GetTodoState(); st {
	case queuev1.TodoState_TODO_STATE_UNSPECIFIED:
	case queuev1.TodoState_TODO_STATE_PENDING, queuev1.TodoState_TODO_STATE_RUNNING, queuev1.TodoState_TODO_STATE_COMPLETED,
		queuev1.TodoState_TODO_STATE_DEAD, queuev1.TodoState_TODO_STATE_CANCELLED:
		f.TodoState = strings.ToLower(strings.TrimPrefix(st.String(), "TODO_STATE_"))
	default:
		return f, apierr.Invalid(apierr.FieldViolation{Field: "todo_state", Description: "must be a defined TodoState"})
	}
	if tok := req.GetPageToken(); tok != "" {
		id, err := parsePageToken(tok)
		if err != nil {
			return f, apierr.Invalid(apierr.FieldViolation{Field: "page_token", Description: "is not a token from ListEvents"})
		}
		f.BeforeID = id
	}
	return f, nil
}

// pageToken encodes the keyset position; opaque to clients.
func pageToken(lastID int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("ev:" + strconv.FormatInt(lastID, 10)))
}

func parsePageToken(tok string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, err
	}
	s, ok := strings.CutPrefix(string(b), "ev:")
	if !ok {
		return 0, errors.New("bad token")
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, errors.New("bad token")
	}
	return id, nil
}

// eventProto renders a stored event; withPayload false leaves payload
// empty (size_bytes is always set).
func eventProto(r store.EventRow, withPayload bool) *ingestv1.Event {
	ev := &ingestv1.Event{
		Id: r.ID, HumanId: r.HumanID.String(), Source: r.Source, Topic: r.Topic, ContentType: r.ContentType,
		ReceivedAt: timestamppb.New(r.ReceivedAt), Headers: map[string]string{},
	}
	if r.SizeBytes != nil {
		ev.SizeBytes = *r.SizeBytes
	}
	if withPayload {
		ev.Payload = r.Payload
	}
	if r.EndpointID != nil {
		ev.EndpointId = r.EndpointID.String()
	}
	if r.AdapterID != nil {
		ev.AdapterId = r.AdapterID.String()
	}
	if r.PublishedBy != nil {
		ev.PublishedBy = r.PublishedBy.String()
	}
	if r.AgentID != nil {
		ev.AgentId = r.AgentID.String()
	}
	if r.DeliveryID != nil {
		ev.DeliveryId = *r.DeliveryID
	}
	ev.ReplayCount = r.ReplayCount
	if r.LastReplayedAt != nil {
		ev.LastReplayedAt = timestamppb.New(*r.LastReplayedAt)
	}
	if r.PayloadPrunedAt != nil {
		ev.PayloadPrunedAt = timestamppb.New(*r.PayloadPrunedAt)
	}
	_ = json.Unmarshal(r.Headers, &ev.Headers) // written by this service as a string map
	return ev
}

// receivedRange is a listing's optional received_after/received_before
// bounds, INVALID_ARGUMENT when after is later than before.
func receivedRange(after, before *timestamppb.Timestamp) (a, b *time.Time, err error) {
	if after != nil {
		v := after.AsTime()
		a = &v
	}
	if before != nil {
		v := before.AsTime()
		b = &v
	}
	if a != nil && b != nil && a.After(*b) {
		return nil, nil, apierr.Invalid(apierr.FieldViolation{Field: "received_after", Description: "must not be later than received_before"})
	}
	return a, b, nil
}
