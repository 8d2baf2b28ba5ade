package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/pkg/postgres"
	"github.com/switchboard/switchboard/services/ingest/internal/store/dbsqlc"
)

// ErrNoEvent means no event has the id (for this reader).
var ErrNoEvent = errors.New("ingest: no such event")

// EventRow is a stored event as the RPCs render it.
type EventRow = dbsqlc.EventGetRow

// Reader is who reads events: the tenant, and the agent a credential acts as
// (nil for a human's credential). An agent reads only the events for it, the
// ones it published and the tenant's shared ones (agent_id NULL); every
// other event is missing to it (see queries.sql).
type Reader struct {
	HumanID uuid.UUID
	AgentID *uuid.UUID
}

// GetEvent returns one of r's events, payload included, or ErrNoEvent.
func (s *Store) GetEvent(ctx context.Context, r Reader, id int64) (EventRow, error) {
	row, err := s.q.EventGet(ctx, s.pool, dbsqlc.EventGetParams{ID: id, HumanID: r.HumanID, CallerAgentID: r.AgentID})
	if errors.Is(err, pgx.ErrNoRows) {
		return EventRow{}, ErrNoEvent
	}
	if err != nil {
		return EventRow{}, fmt.Errorf("ingest: get event: %w", err)
	}
	return row, nil
}

// EventByDelivery returns the event stored for a delivery id if r may read
// it, or ErrNoEvent.
func (s *Store) EventByDelivery(ctx context.Context, r Reader, source, deliveryID string) (EventRow, error) {
	row, err := s.q.EventByDelivery(ctx, s.pool, dbsqlc.EventByDeliveryParams{
		HumanID: r.HumanID, Source: source, DeliveryID: &deliveryID, CallerAgentID: r.AgentID,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return EventRow{}, ErrNoEvent
	}
	if err != nil {
		return EventRow{}, fmt.Errorf("ingest: event by delivery: %w", err)
	}
	return EventRow(row), nil
}

// EventFilter selects events for ListEvents; zero fields do not filter,
// except Reader, which always does.
type EventFilter struct {
	Reader
	Source, Topic                 string
	EndpointID                    *uuid.UUID
	ReceivedAfter, ReceivedBefore *time.Time
	BeforeID                      int64  // keyset: only ids below it; 0 = from the newest
	TodoState                     string // "" = any (and events without a todo)
	IncludePayload                bool
	Limit                         int32
}

// ListEvents returns f's events, newest first; an agent's through its own
// statement (see EventListForAgent).
func (s *Store) ListEvents(ctx context.Context, f EventFilter) ([]EventRow, error) {
	if f.AgentID != nil {
		return s.listForAgent(ctx, f)
	}
	p := dbsqlc.EventListParams{
		IncludePayload: f.IncludePayload, HumanID: f.HumanID, EndpointID: f.EndpointID,
		ReceivedAfter: f.ReceivedAfter, ReceivedBefore: f.ReceivedBefore, PageSize: f.Limit,
		Source: optional(f.Source), Topic: optional(f.Topic), TodoState: optional(f.TodoState),
	}
	if f.BeforeID > 0 {
		p.BeforeID = &f.BeforeID
	}
	rows, err := s.q.EventList(ctx, s.pool, p)
	if err != nil {
		return nil, fmt.Errorf("ingest: list events: %w", err)
	}
	return postgres.Convert(rows, func(r dbsqlc.EventListRow) EventRow { return EventRow(r) }), nil
}

// AgentBelongs reports whether agent is one of human's agents.
func (s *Store) AgentBelongs(ctx context.Context, human, agent uuid.UUID) (bool, error) {
	n, err := s.q.AgentOfHuman(ctx, s.pool, dbsqlc.AgentOfHumanParams{AgentID: agent, HumanID: human})
	if err != nil {
		return false, fmt.Errorf("ingest: agent lookup: %w", err)
	}
	return n > 0, nil
}

// listForAgent is ListEvents for a reader that acts as an agent.
func (s *Store) listForAgent(ctx context.Context, f EventFilter) ([]EventRow, error) {
	p := dbsqlc.EventListForAgentParams{
		IncludePayload: f.IncludePayload, HumanID: f.HumanID, CallerAgentID: *f.AgentID, EndpointID: f.EndpointID,
		ReceivedAfter: f.ReceivedAfter, ReceivedBefore: f.ReceivedBefore, PageSize: f.Limit,
		Source: optional(f.Source), Topic: optional(f.Topic), TodoState: optional(f.TodoState),
	}
	if f.BeforeID > 0 {
		p.BeforeID = &f.BeforeID
	}
	rows, err := s.q.EventListForAgent(ctx, s.pool, p)
	if err != nil {
		return nil, fmt.Errorf("ingest: list an agent's events: %w", err)
	}
	return postgres.Convert(rows, func(r dbsqlc.EventListForAgentRow) EventRow { return EventRow(r) }), nil
}

// optional is s as a nullable parameter: "" is NULL (no filter).
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
