package ingest

import (
	"context"

	"github.com/google/uuid"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/services/ingest/internal/store"
)

// maxReplayLimit bounds ReplayEventsRequest.limit.
const maxReplayLimit = 1000

// ReplayEvents replays up to limit of the caller's events that match the
// filter, oldest first after after_id, as ReplayEvent does, skipping (and
// counting) those that cannot be replayed.
func (s *Server) ReplayEvents(ctx context.Context, req *ingestv1.ReplayEventsRequest) (*ingestv1.ReplayEventsResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	f, err := replayFilter(req)
	if err != nil {
		return nil, err
	}
	r, err := s.replayOf(ctx, p, req.GetQueue(), req.GetAgentId(), req.GetReplayKey())
	if err != nil {
		return nil, err
	}
	r.Targets = memoTargets(r.Targets)
	c, err := s.store.ReplayEvents(ctx, r, f)
	if err != nil {
		return nil, err
	}
	return &ingestv1.ReplayEventsResponse{
		Replayed: c.Replayed, AlreadyReplayed: c.AlreadyReplayed, SkippedPruned: c.SkippedPruned, SkippedNoTarget: c.SkippedNoTarget,
		LastEventId: c.LastEventID, More: c.Looked == f.Limit,
	}, nil
}

// replayFilter checks a bulk replay's filter (protovalidate checks it in
// the interceptor too; the handler must be safe without it).
func replayFilter(req *ingestv1.ReplayEventsRequest) (store.ReplayFilter, error) {
	f := store.ReplayFilter{Topic: req.GetTopic(), AfterID: req.GetAfterId(), Limit: req.GetLimit()}
	switch {
	case f.Limit < 1 || f.Limit > maxReplayLimit:
		return f, apierr.Invalid(apierr.FieldViolation{Field: "limit", Description: "must be between 1 and 1000"})
	case f.AfterID < 0:
		return f, apierr.Invalid(apierr.FieldViolation{Field: "after_id", Description: "must be ≥ 0"})
	case len(f.Topic) > 255:
		return f, apierr.Invalid(apierr.FieldViolation{Field: "topic", Description: "must be at most 255 characters"})
	}
	for _, id := range []struct {
		field, value string
		into         **uuid.UUID
	}{{"endpoint_id", req.GetEndpointId(), &f.EndpointID}, {"adapter_id", req.GetAdapterId(), &f.AdapterID}} {
		if id.value == "" {
			continue
		}
		u, err := uuid.Parse(id.value)
		if err != nil {
			return f, apierr.Invalid(apierr.FieldViolation{Field: id.field, Description: "must be a uuid"})
		}
		*id.into = &u
	}
	var err error
	if f.ReceivedAfter, f.ReceivedBefore, err = receivedRange(req.GetReceivedAfter(), req.GetReceivedBefore()); err != nil {
		return f, err
	}
	return f, nil
}

// memoTargets remembers targets' answer per webhook endpoint or adapter
// (and topic, the todos' kind) for one bulk replay, so a thousand events
// of one endpoint read it once. A published event's targets depend on the
// event, and are not remembered.
func memoTargets(targets func(context.Context, store.ReplayRow) ([]store.Target, error)) func(context.Context, store.ReplayRow) ([]store.Target, error) {
	seen := map[string][]store.Target{}
	return func(ctx context.Context, ev store.ReplayRow) ([]store.Target, error) {
		if ev.Source == sourcePublish {
			return targets(ctx, ev)
		}
		key := ev.Source + "/" + ev.Topic // the topic is the todos' kind
		if ts, ok := seen[key]; ok {
			return append([]store.Target(nil), ts...), nil
		}
		ts, err := targets(ctx, ev)
		if err != nil {
			return nil, err
		}
		seen[key] = ts
		return append([]store.Target(nil), ts...), nil
	}
}
