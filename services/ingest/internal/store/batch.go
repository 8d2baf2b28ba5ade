package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/ingest/internal/store/dbsqlc"
)

// IngestBatch stores events that share a human, a source and a target with
// their todos in ONE statement: a single event, the group commit of
// concurrent webhook requests, or a pull adapter's batch. Results are in item
// order. A delivery id stored before, or earlier in the same batch, is a
// duplicate. Body-hash dedup is not checked here (Ingest does it under its
// lock). If the statement fails nothing was stored (it is one statement),
// so the caller may retry the items one by one.
func (s *Store) IngestBatch(ctx context.Context, events []Event, t Target) ([]Stored, error) {
	return s.ingestBatch(ctx, s.write, events, t)
}

func (s *Store) ingestBatch(ctx context.Context, db dbsqlc.DBTX, events []Event, t Target) ([]Stored, error) {
	if len(events) == 0 {
		return nil, nil
	}
	first := events[0]
	n := len(events)
	p := dbsqlc.EventIngestBatchParams{
		HumanID: first.HumanID, Source: first.Source, EndpointID: first.EndpointID, AdapterID: first.AdapterID,
		PublishedBy: first.PublishedBy, Queue: t.Queue, AgentID: t.AgentID, Kind: t.Kind, TodoPayload: t.Payload,
		DefaultMaxAttempts: settings.DefaultQueue.MaxAttempts,
		DeliveryIds:        make([]string, n), Topics: make([]string, n), Headers: make([]string, n), ContentTypes: make([]string, n),
		Payloads: make([][]byte, n), BodySha256s: make([][]byte, n), VerifiedSchemes: make([]string, n), SourceIps: make([]string, n),
	}
	for i, e := range events {
		if e.HumanID != first.HumanID || e.Source != first.Source || !sameID(e.PublishedBy, first.PublishedBy) {
			return nil, fmt.Errorf("ingest: batch item %d is of another tenant, source or publisher", i)
		}
		h := []byte(`{}`)
		if e.Headers != nil {
			var err error
			if h, err = json.Marshal(e.Headers); err != nil {
				return nil, fmt.Errorf("ingest: headers: %w", err)
			}
		}
		p.DeliveryIds[i], p.Topics[i], p.Headers[i], p.ContentTypes[i] = e.DeliveryID, e.Topic, string(h), e.ContentType
		p.Payloads[i], p.BodySha256s[i], p.VerifiedSchemes[i] = e.Payload, e.BodySHA256, e.VerifiedScheme
		if p.Payloads[i] == nil {
			p.Payloads[i] = []byte{} // NOT NULL: an empty body is still a body
		}
		if p.BodySha256s[i] == nil {
			p.BodySha256s[i] = []byte{}
		}
		if e.SourceIP != nil {
			p.SourceIps[i] = e.SourceIP.String()
		}
	}
	rows, err := s.q.EventIngestBatch(ctx, db, p)
	if err != nil {
		return nil, fmt.Errorf("ingest: store %d events: %w", n, err)
	}
	return matchBatch(events, rows)
}

func sameID(a, b *uuid.UUID) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// matchBatch pairs items with the inserted rows: keyed items by delivery id
// (the first item with an id is the one that could be inserted), unkeyed
// items in order with the unkeyed rows, whose ids ascend in item order.
func matchBatch(events []Event, rows []dbsqlc.EventIngestBatchRow) ([]Stored, error) {
	byKey := map[string]dbsqlc.EventIngestBatchRow{}
	var unkeyed []dbsqlc.EventIngestBatchRow
	for _, r := range rows {
		if r.DeliveryID != "" {
			byKey[r.DeliveryID] = r
		} else {
			unkeyed = append(unkeyed, r)
		}
	}
	out := make([]Stored, len(events))
	for i, e := range events {
		if e.DeliveryID == "" {
			if len(unkeyed) == 0 { // cannot happen: an event without an id never conflicts
				return nil, fmt.Errorf("ingest: batch returned fewer events than it was given")
			}
			r := unkeyed[0]
			unkeyed = unkeyed[1:]
			out[i] = Stored{EventID: r.ID, TodoID: r.TodoID, ReceivedAt: r.ReceivedAt}
			continue
		}
		r, ok := byKey[e.DeliveryID]
		if !ok {
			out[i] = Stored{Duplicate: true}
			continue
		}
		delete(byKey, e.DeliveryID) // a later item with the same id is a duplicate
		out[i] = Stored{EventID: r.ID, TodoID: r.TodoID, ReceivedAt: r.ReceivedAt}
	}
	return out, nil
}
