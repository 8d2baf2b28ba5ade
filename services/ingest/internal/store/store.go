// Package store is the ingest service's data access: an event and its todo
// stored in one transaction, deduplicated by the sender's delivery id and,
// where that id is not signed, by the body's SHA-256 within the dedup
// window; and the endpoint lookup the webhook edge verifies against.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard/switchboard/services/ingest/internal/store/dbsqlc"
)

// Store runs the ingest queries over a pool.
type Store struct {
	pool *pgxpool.Pool
	q    *dbsqlc.Queries
}

// New returns a store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool, q: dbsqlc.New()} }

// Event is one inbound event to store.
type Event struct {
	HumanID     uuid.UUID
	Source      string // dedup scope: "endpoint:<uuid>", "adapter:<uuid>" or "publish"
	EndpointID  *uuid.UUID
	AdapterID   *uuid.UUID
	PublishedBy *uuid.UUID
	Topic       string
	// DeliveryID is the sender's id for the delivery ("" = none); a second
	// event with the same id from the same source is a duplicate.
	DeliveryID string
	// BodySHA256, when set, also makes a second event with the same body
	// from the same source within the dedup window a duplicate: set it when
	// DeliveryID is missing or not covered by the signature.
	BodySHA256     []byte
	Headers        map[string]string
	ContentType    string
	Payload        []byte
	VerifiedScheme string
	SourceIP       *netip.Addr
}

// Target is where the event's todo goes; an empty Queue means no todo.
type Target struct {
	Queue   string
	AgentID *uuid.UUID
	Kind    string
	// Payload is the todo's payload (a JSON object); nil means a reference
	// to the event ({"event_id": …, "source": …}).
	Payload []byte
}

// Stored is the outcome of Ingest.
type Stored struct {
	// Duplicate: the event was stored before; nothing was written.
	Duplicate  bool
	EventID    int64 // 0 for a duplicate
	TodoID     int64 // 0 for a duplicate
	ReceivedAt time.Time
}

// Ingest stores e and its todo in one transaction, or recognises a
// duplicate and writes nothing. The caller acknowledges the sender only
// after it returned without error.
func (s *Store) Ingest(ctx context.Context, e Event, t Target) (Stored, error) {
	headers, err := json.Marshal(e.Headers)
	if err != nil {
		return Stored{}, fmt.Errorf("ingest: headers: %w", err)
	}
	if e.Headers == nil {
		headers = []byte(`{}`)
	}
	if e.BodySHA256 == nil {
		return s.ingestOne(ctx, e, t, headers)
	}
	var out Stored
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if e.BodySHA256 != nil {
			dup, err := s.recentBody(ctx, tx, e)
			if err != nil || dup {
				out.Duplicate = dup
				return err
			}
		}
		p := dbsqlc.EventInsertParams{
			HumanID: e.HumanID, Source: e.Source, EndpointID: e.EndpointID, AdapterID: e.AdapterID,
			PublishedBy: e.PublishedBy, Topic: e.Topic, Headers: headers, ContentType: e.ContentType,
			Payload: e.Payload, BodySha256: e.BodySHA256, VerifiedScheme: e.VerifiedScheme, SourceIp: e.SourceIP,
		}
		if e.DeliveryID != "" {
			p.DeliveryID = &e.DeliveryID
		}
		if p.Payload == nil {
			p.Payload = []byte{} // NOT NULL: an empty body is still a body
		}
		row, err := s.q.EventInsert(ctx, tx, p)
		if errors.Is(err, pgx.ErrNoRows) {
			out.Duplicate = true
			return nil
		}
		if err != nil {
			return fmt.Errorf("ingest: insert event: %w", err)
		}
		out.EventID, out.ReceivedAt = row.ID, row.ReceivedAt
		if t.Queue == "" {
			return nil
		}
		payload := t.Payload
		if payload == nil {
			if payload, err = json.Marshal(todoPayload{EventID: row.ID, Source: e.Source, Topic: e.Topic, ContentType: e.ContentType, DeliveryID: e.DeliveryID}); err != nil {
				return fmt.Errorf("ingest: todo payload: %w", err)
			}
		}
		out.TodoID, err = s.q.TodoInsertForEvent(ctx, tx, dbsqlc.TodoInsertForEventParams{
			HumanID: e.HumanID, Queue: t.Queue, AgentID: t.AgentID, EventID: &row.ID, Kind: t.Kind, Payload: payload,
		})
		if err != nil {
			return fmt.Errorf("ingest: insert todo: %w", err)
		}
		return nil
	})
	if err != nil {
		return Stored{}, err
	}
	return out, nil
}

// ingestOne stores e and its todo with one statement (EventIngest): one
// round trip and one commit, for events that need no body-hash dedup.
func (s *Store) ingestOne(ctx context.Context, e Event, t Target, headers []byte) (Stored, error) {
	p := dbsqlc.EventIngestParams{
		HumanID: e.HumanID, Source: e.Source, EndpointID: e.EndpointID, AdapterID: e.AdapterID,
		PublishedBy: e.PublishedBy, Topic: e.Topic, Headers: headers, ContentType: e.ContentType,
		Payload: e.Payload, VerifiedScheme: e.VerifiedScheme, SourceIp: e.SourceIP,
		Queue: t.Queue, AgentID: t.AgentID, Kind: t.Kind, TodoPayload: t.Payload,
	}
	if e.DeliveryID != "" {
		p.DeliveryID = &e.DeliveryID
	}
	if p.Payload == nil {
		p.Payload = []byte{}
	}
	row, err := s.q.EventIngest(ctx, s.pool, p)
	if errors.Is(err, pgx.ErrNoRows) {
		return Stored{Duplicate: true}, nil
	}
	if err != nil {
		return Stored{}, fmt.Errorf("ingest: store event: %w", err)
	}
	return Stored{EventID: row.ID, TodoID: row.TodoID, ReceivedAt: row.ReceivedAt}, nil
}

// todoPayload is the payload of an event's todo: a reference, not the body
// (IngestService.GetEvent returns the raw bytes).
type todoPayload struct {
	EventID     int64  `json:"event_id"`
	Source      string `json:"source"`
	Topic       string `json:"topic,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	DeliveryID  string `json:"delivery_id,omitempty"`
}

// recentBody takes the body's advisory lock (held to the end of tx) and
// reports whether the same body from the same source arrived within the
// dedup window.
func (s *Store) recentBody(ctx context.Context, tx pgx.Tx, e Event) (bool, error) {
	if err := s.q.LockBodyHash(ctx, tx, dbsqlc.LockBodyHashParams{Source: e.Source, BodySha256: e.BodySHA256}); err != nil {
		return false, fmt.Errorf("ingest: lock body hash: %w", err)
	}
	window, err := s.q.DedupWindowSeconds(ctx, tx)
	if err != nil {
		return false, fmt.Errorf("ingest: dedup window: %w", err)
	}
	_, err = s.q.EventRecentByBody(ctx, tx, dbsqlc.EventRecentByBodyParams{
		HumanID: e.HumanID, Source: e.Source, BodySha256: e.BodySHA256, WindowSeconds: float64(window),
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("ingest: recent body: %w", err)
	}
	return true, nil
}

// Notify wakes other nodes' long-poll claims of queue (best effort, after
// the commit).
func (s *Store) Notify(ctx context.Context, human uuid.UUID, queue string) error {
	return s.q.QueueNotify(ctx, s.pool, human.String()+":"+queue)
}
