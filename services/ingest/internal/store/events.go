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

// ErrNoEvent means no event has the id (for this tenant).
var ErrNoEvent = errors.New("ingest: no such event")

// EventRow is a stored event as the RPCs render it.
type EventRow = dbsqlc.EventGetRow

// GetEvent returns one of human's events, payload included, or ErrNoEvent.
func (s *Store) GetEvent(ctx context.Context, human uuid.UUID, id int64) (EventRow, error) {
	r, err := s.q.EventGet(ctx, s.pool, dbsqlc.EventGetParams{ID: id, HumanID: human})
	if errors.Is(err, pgx.ErrNoRows) {
		return EventRow{}, ErrNoEvent
	}
	if err != nil {
		return EventRow{}, fmt.Errorf("ingest: get event: %w", err)
	}
	return r, nil
}

// EventByDelivery returns the event stored for a delivery id, or ErrNoEvent.
func (s *Store) EventByDelivery(ctx context.Context, human uuid.UUID, source, deliveryID string) (EventRow, error) {
	r, err := s.q.EventByDelivery(ctx, s.pool, dbsqlc.EventByDeliveryParams{HumanID: human, Source: source, DeliveryID: &deliveryID})
	if errors.Is(err, pgx.ErrNoRows) {
		return EventRow{}, ErrNoEvent
	}
	if err != nil {
		return EventRow{}, fmt.Errorf("ingest: event by delivery: %w", err)
	}
	return EventRow(r), nil
}

// EventFilter selects events for ListEvents; zero fields do not filter.
type EventFilter struct {
	HumanID                       uuid.UUID
	Source, Topic                 string
	EndpointID                    *uuid.UUID
	ReceivedAfter, ReceivedBefore *time.Time
	BeforeID                      int64  // keyset: only ids below it; 0 = from the newest
	TodoState                     string // "" = any (and events without a todo)
	IncludePayload                bool
	Limit                         int32
}

// ListEvents returns f's events, newest first.
func (s *Store) ListEvents(ctx context.Context, f EventFilter) ([]EventRow, error) {
	p := dbsqlc.EventListParams{
		IncludePayload: f.IncludePayload, HumanID: f.HumanID, EndpointID: f.EndpointID,
		ReceivedAfter: f.ReceivedAfter, ReceivedBefore: f.ReceivedBefore, PageSize: f.Limit,
	}
	if f.Source != "" {
		p.Source = &f.Source
	}
	if f.Topic != "" {
		p.Topic = &f.Topic
	}
	if f.BeforeID > 0 {
		p.BeforeID = &f.BeforeID
	}
	if f.TodoState != "" {
		p.TodoState = &f.TodoState
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
