package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/pkg/postgres"
	"github.com/switchboard/switchboard/services/ingest/internal/store/dbsqlc"
	"github.com/switchboard/switchboard/services/queue"
)

// Ingest is the one way events are stored: events that share a human, a
// source, a publisher and an agent, each with a todo in every one of
// targets (none, or only targets without a queue: the events are stored
// without a todo), in ONE round trip and one commit. That is a single
// event, the group commit of concurrent webhook requests, or a pull
// adapter's batch. Results are in item order. A delivery id stored before,
// or earlier in the same call, is a duplicate, and nothing is written for
// it. The caller acknowledges the sender only after Ingest returned
// without error, then announces the created todos
// (queue.Todos.Committed).
//
// An event with BodySHA256 (an endpoint's body-hash dedup) is checked
// under the body's advisory lock in a transaction of its own, so it comes
// alone: a call with more than one event refuses it. If Ingest fails
// nothing was stored, so the caller may retry the events one by one.
//
// Rows are locked in one order (see EventInsertBatch; targets are inserted
// sorted by queue, agent, kind and payload, whatever order the caller
// gives), so concurrent calls do not deadlock; a conflict that still aborts
// one is retried here.
func (s *Store) Ingest(ctx context.Context, events []Event, targets ...Target) ([]Stored, error) {
	targets = sortedTargets(targets)
	for _, e := range events {
		if e.BodySHA256 == nil {
			continue
		}
		if len(events) != 1 {
			return nil, fmt.Errorf("ingest: an event with body-hash dedup is stored alone, not in a batch of %d", len(events))
		}
		return s.ingestBodyChecked(ctx, e, targets)
	}
	return postgres.RetryConflicts1(ctx, func() ([]Stored, error) { return s.ingestBatch(ctx, s.write, events, targets) })
}

// ingestBodyChecked stores e unless the same body came from the same source
// within its window: the check and the insert in one transaction, behind
// the body's advisory lock.
func (s *Store) ingestBodyChecked(ctx context.Context, e Event, targets []Target) ([]Stored, error) {
	var out []Stored
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		dup, err := s.recentBody(ctx, tx, e)
		if err != nil || dup {
			out = []Stored{{Duplicate: dup}}
			return err
		}
		out, err = s.ingestBatch(ctx, tx, []Event{e}, targets)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ingestBatch sends the events' insert and the queue's insert of their todos
// for each target (none: no todo; see Ingest) in one pipeline on db:
// in one implicit transaction on a pool, inside the caller's transaction on
// a pgx.Tx.
func (s *Store) ingestBatch(ctx context.Context, db postgres.BatchSender, events []Event, targets []Target) (_ []Stored, err error) {
	if len(events) == 0 {
		return nil, nil
	}
	p, err := insertParams(events)
	if err != nil {
		return nil, err
	}
	pipe := postgres.NewPipeline(db)
	defer func() {
		if cerr := pipe.Close(); err == nil {
			err = cerr
		}
	}()
	inserted := s.q.EventInsertBatch(ctx, pipe, []dbsqlc.EventInsertBatchParams{p})
	todos := make([]func() ([]queue.EventTodo, error), len(targets))
	for i, t := range targets {
		todos[i] = s.todos.QueueEventTodos(ctx, pipe, queue.EventTodos{
			HumanID: p.HumanID, Source: p.Source, Queue: t.Queue, AgentID: t.AgentID, Kind: t.Kind, KindFromTopic: t.KindFromTopic,
			Payload: t.Payload,
		})
	}
	pipe.Send(ctx)
	var rows []dbsqlc.EventInsertBatchRow
	inserted.Query(func(_ int, r []dbsqlc.EventInsertBatchRow, e error) { rows, err = r, e })
	if err != nil {
		return nil, fmt.Errorf("ingest: store %d events: %w", len(events), err)
	}
	out, err := matchBatch(events, rows)
	if err != nil {
		return nil, err
	}
	for ti, read := range todos {
		created, err := read()
		if err != nil {
			return nil, fmt.Errorf("ingest: store the todos of %d events: %w", len(events), err)
		}
		attachTodos(out, targets[ti].Queue, created)
	}
	return out, nil
}

// insertParams encodes events (all of one human, source, publisher and
// agent) as EventInsertBatch's parallel arrays.
func insertParams(events []Event) (dbsqlc.EventInsertBatchParams, error) {
	first, n := events[0], len(events)
	p := dbsqlc.EventInsertBatchParams{
		HumanID: first.HumanID, Source: first.Source, EndpointID: first.EndpointID, AdapterID: first.AdapterID,
		PublishedBy: first.PublishedBy, AgentID: first.AgentID,
		DeliveryIds: make([]string, n), Topics: make([]string, n), Headers: make([]string, n), ContentTypes: make([]string, n),
		Payloads: make([][]byte, n), BodySha256s: make([][]byte, n), VerifiedSchemes: make([]string, n), SourceIps: make([]string, n),
		TraceParents: make([]string, n),
	}
	for i, e := range events {
		if e.HumanID != first.HumanID || e.Source != first.Source || !sameID(e.PublishedBy, first.PublishedBy) ||
			!sameID(e.AgentID, first.AgentID) {
			return p, fmt.Errorf("ingest: batch item %d is of another tenant, source, publisher or agent", i)
		}
		h := []byte(`{}`)
		if e.Headers != nil {
			var err error
			if h, err = json.Marshal(e.Headers); err != nil {
				return p, fmt.Errorf("ingest: headers: %w", err)
			}
		}
		p.DeliveryIds[i], p.Topics[i], p.Headers[i], p.ContentTypes[i] = e.DeliveryID, e.Topic, string(h), e.ContentType
		p.Payloads[i], p.BodySha256s[i], p.VerifiedSchemes[i] = e.Payload, e.BodySHA256, e.VerifiedScheme
		p.TraceParents[i] = e.TraceParent
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
	return p, nil
}

func sameID(a, b *uuid.UUID) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// matchBatch pairs items with the inserted rows: keyed items by delivery id
// (the first item with an id is the one that could be inserted), unkeyed
// items in order with the unkeyed rows, whose ids ascend in item order.
func matchBatch(events []Event, rows []dbsqlc.EventInsertBatchRow) ([]Stored, error) {
	slices.SortFunc(rows, func(a, b dbsqlc.EventInsertBatchRow) int { return cmp.Compare(a.ID, b.ID) })
	byKey := map[string]dbsqlc.EventInsertBatchRow{}
	var unkeyed []dbsqlc.EventInsertBatchRow
	for _, r := range rows {
		if r.DeliveryID != "" {
			byKey[r.DeliveryID] = r
		} else {
			unkeyed = append(unkeyed, r)
		}
	}
	out := make([]Stored, len(events))
	for i, e := range events {
		var r dbsqlc.EventInsertBatchRow
		if e.DeliveryID == "" {
			if len(unkeyed) == 0 { // cannot happen: an event without an id never conflicts
				return nil, fmt.Errorf("ingest: batch returned fewer events than it was given")
			}
			r, unkeyed = unkeyed[0], unkeyed[1:]
		} else {
			var ok bool
			if r, ok = byKey[e.DeliveryID]; !ok {
				out[i] = Stored{Duplicate: true}
				continue
			}
			delete(byKey, e.DeliveryID) // a later item with the same id is a duplicate
		}
		out[i] = Stored{EventID: r.ID, ReceivedAt: r.ReceivedAt}
	}
	return out, nil
}
