package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/switchboard/switchboard/services/ingest/internal/store/dbsqlc"
)

// IngestBatch stores events that share a source and a target (and need no
// body-hash dedup) with their todos in ONE statement: the group commit of
// concurrent webhook requests. Results are in item order. A delivery id
// stored before, or earlier in the same batch, is a duplicate. If the
// statement fails nothing was stored (it is one statement), so the caller
// may retry the items one by one.
func (s *Store) IngestBatch(ctx context.Context, events []Event, t Target) ([]Stored, error) {
	if len(events) == 0 {
		return nil, nil
	}
	first := events[0]
	p := dbsqlc.EventIngestBatchParams{
		HumanID: first.HumanID, Source: first.Source, EndpointID: first.EndpointID, AdapterID: first.AdapterID,
		Queue: t.Queue, AgentID: t.AgentID, Kind: t.Kind,
		DeliveryIds: make([]string, len(events)), Topics: make([]string, len(events)), Headers: make([]string, len(events)),
		ContentTypes: make([]string, len(events)), Payloads: make([][]byte, len(events)),
		VerifiedSchemes: make([]string, len(events)), SourceIps: make([]string, len(events)),
	}
	for i, e := range events {
		if e.HumanID != first.HumanID || e.Source != first.Source || e.BodySHA256 != nil {
			return nil, fmt.Errorf("ingest: batch item %d has another source or needs body dedup", i)
		}
		h, err := json.Marshal(e.Headers)
		if err != nil {
			return nil, fmt.Errorf("ingest: headers: %w", err)
		}
		if e.Headers == nil {
			h = []byte(`{}`)
		}
		p.DeliveryIds[i], p.Topics[i], p.Headers[i], p.ContentTypes[i] = e.DeliveryID, e.Topic, string(h), e.ContentType
		p.Payloads[i], p.VerifiedSchemes[i] = e.Payload, e.VerifiedScheme
		if p.Payloads[i] == nil {
			p.Payloads[i] = []byte{}
		}
		if e.SourceIP != nil {
			p.SourceIps[i] = e.SourceIP.String()
		}
	}
	rows, err := s.q.EventIngestBatch(ctx, s.pool, p)
	if err != nil {
		return nil, fmt.Errorf("ingest: store %d events: %w", len(events), err)
	}
	return matchBatch(events, rows)
}

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
