package ingest

import (
	"context"
	"errors"
	"strings"

	"github.com/google/uuid"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/textcheck"
	"github.com/switchboard/switchboard/services/ingest/internal/store"
)

// maxReplayKey bounds ReplayEventRequest.replay_key (the todos' dedupe key
// is "replay:<event id>:<key>", within todos_dedupe_key_check's 255).
const maxReplayKey = 128

// ReplayEvent creates new todos for one stored event (see the contract):
// into the queue the request names or where the event's origin sends its
// work now, recorded on the event, idempotent under a replay_key.
func (s *Server) ReplayEvent(ctx context.Context, req *ingestv1.ReplayEventRequest) (*ingestv1.ReplayEventResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if req.GetEventId() <= 0 {
		return nil, apierr.Invalid(apierr.FieldViolation{Field: "event_id", Description: "must be ≥ 1"})
	}
	r, err := s.replayOf(ctx, p, req.GetQueue(), req.GetAgentId(), req.GetReplayKey())
	if err != nil {
		return nil, err
	}
	id := req.GetEventId()
	res, err := s.store.ReplayEvent(ctx, r, id)
	switch {
	case errors.Is(err, store.ErrNoEvent):
		return nil, apierr.NotFound("event %d not found", id)
	case errors.Is(err, store.ErrPayloadPruned):
		return nil, apierr.FailedPrecondition("event %d cannot be replayed: its payload was pruned", id)
	case errors.Is(err, store.ErrNoTarget):
		return nil, apierr.FailedPrecondition("event %d has no queue to replay into (it was published without one, or its endpoint or adapter was deleted): name a queue", id)
	case err != nil:
		return nil, err
	}
	row, err := s.store.GetEvent(ctx, readerOf(p), id)
	if err != nil {
		return nil, err
	}
	out := &ingestv1.ReplayEventResponse{Event: eventProto(row, false), Duplicate: res.Duplicate}
	for _, t := range res.Todos {
		td := &ingestv1.ReplayedTodo{TodoId: t.ID, Queue: t.Queue}
		if t.AgentID != nil {
			td.AgentId = t.AgentID.String()
		}
		out.Todos = append(out.Todos, td)
	}
	return out, nil
}

// replayOf is how p replays: as its reader, with key, into the override
// (queue and/or agent) when one is named, else each event's origin's
// current targets (replayTargets).
func (s *Server) replayOf(ctx context.Context, p auth.Principal, queue, agentID, key string) (store.Replay, error) {
	r := store.Replay{Reader: readerOf(p), Key: key, Targets: s.replayTargets}
	if len(key) > maxReplayKey {
		return r, apierr.Invalid(apierr.FieldViolation{Field: "replay_key", Description: "must be at most 128 characters"})
	}
	if queue != "" && !textcheck.QueueName(queue) {
		return r, apierr.Invalid(apierr.FieldViolation{Field: "queue", Description: "must match ^[a-z0-9][a-z0-9._-]{0,62}$"})
	}
	var agent *uuid.UUID
	if agentID != "" {
		a, err := uuid.Parse(agentID)
		if err != nil {
			return r, apierr.Invalid(apierr.FieldViolation{Field: "agent_id", Description: "must be a uuid"})
		}
		belongs, err := s.store.AgentBelongs(ctx, p.HumanID, a)
		if err != nil {
			return r, err
		}
		if !belongs {
			return r, apierr.NotFound("agent %s not found", a)
		}
		agent = &a
	}
	switch {
	case queue != "":
		r.Targets = func(_ context.Context, ev store.ReplayRow) ([]store.Target, error) {
			kind, payload := replayTodo(ev)
			return []store.Target{{Queue: queue, AgentID: agent, Kind: kind, Payload: payload}}, nil
		}
	case agent != nil:
		r.Targets = func(ctx context.Context, ev store.ReplayRow) ([]store.Target, error) {
			ts, err := s.replayTargets(ctx, ev)
			for i := range ts {
				ts[i].AgentID = agent
			}
			return ts, err
		}
	}
	return r, nil
}

// replayTargets is where a replay of ev sends its todos when the caller
// names no queue: where its origin sends its work now — the endpoint's or
// adapter's current queue and agent; for a published event, the queue and
// agent of its oldest todo still kept. None (nil) when the origin is gone
// (a deleted endpoint or adapter, a publish without a queue).
func (s *Server) replayTargets(ctx context.Context, ev store.ReplayRow) ([]store.Target, error) {
	kind, payload := replayTodo(ev)
	tenant := auth.Tenant{HumanID: ev.HumanID}
	switch {
	case ev.EndpointID != nil:
		ep, err := s.sources.GetEndpoint(ctx, tenant, *ev.EndpointID)
		if errors.Is(err, apierr.ErrNotFound) { // deleted: the work has nowhere to go
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if len(ep.Routes) > 0 {
			return s.routedReplayTargets(ctx, ev, ep.Slug, kind, payload)
		}
		return []store.Target{{Queue: ep.Queue, AgentID: ep.AgentID, Kind: kind, Payload: payload}}, nil
	case ev.AdapterID != nil:
		ad, err := s.sources.GetAdapter(ctx, tenant, *ev.AdapterID)
		if errors.Is(err, apierr.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return []store.Target{{Queue: ad.Queue, AgentID: ad.AgentID, Kind: kind, Payload: payload}}, nil
	case ev.Source == sourcePublish:
		queue, agent, ok, err := s.store.OriginTodoTarget(ctx, ev.HumanID, ev.ID)
		if err != nil || !ok {
			return nil, err
		}
		return []store.Target{{Queue: queue, AgentID: agent, Kind: kind, Payload: payload}}, nil
	}
	return nil, nil
}

// replayTodo is the kind and payload of a replay's todo of ev, the shape
// its original todo has: kind its topic (else what its source's todos are
// called), payload a reference to the event (nil) except for a published
// event, whose todo's payload is {} (its worker reads the event by the
// todo's event_id).
func replayTodo(ev store.ReplayRow) (kind string, payload []byte) {
	switch {
	case ev.Source == sourcePublish:
		return ev.Topic, []byte(`{}`)
	case ev.Topic != "":
		return ev.Topic, nil
	case strings.HasPrefix(ev.Source, "adapter:"):
		return "adapter", nil
	}
	return "webhook", nil
}
