package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/services/ingest/internal/store/dbsqlc"
	"github.com/switchboard/switchboard/services/queue"
)

// Replay refusals: the event's payload is gone, or its todos have nowhere
// to go.
var (
	ErrPayloadPruned = errors.New("ingest: the event's payload was pruned")
	ErrNoTarget      = errors.New("ingest: the event has no queue to replay into")
)

// replayChunk bounds a bulk replay's transactions: at most this many events
// are locked, and get their todos, per commit.
const replayChunk = 100

// ReplayRow is a stored event as a replay reads it (locked).
type ReplayRow = dbsqlc.EventLockForReplayRow

// Replay says how to replay events: for whom, with which idempotency key,
// and where each event's todos go.
type Replay struct {
	Reader
	// Key, when set, makes each event's todos idempotent per queue (the
	// todos' dedupe key "replay:<event id>:<Key>"): a retry creates none.
	Key string
	// Targets returns where row's todos go (with their kind and payload);
	// none skips the event (ErrNoTarget for ReplayEvent). Called with the
	// event locked.
	Targets func(ctx context.Context, row ReplayRow) ([]Target, error)
}

// Replayed is the outcome of replaying one event.
type Replayed struct {
	Todos []queue.ReplayedTodo
	// Duplicate: every todo already existed under the key; nothing written.
	Duplicate bool
}

// ReplayEvent creates the todos of a replay of event id, and records it on
// the event, in one transaction; ErrNoEvent when r may not read it,
// ErrPayloadPruned, ErrNoTarget. The created todos are announced after the
// commit.
func (s *Store) ReplayEvent(ctx context.Context, r Replay, id int64) (Replayed, error) {
	var out Replayed
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		row, err := s.q.EventLockForReplay(ctx, tx, dbsqlc.EventLockForReplayParams{ID: id, HumanID: r.HumanID, CallerAgentID: r.AgentID})
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNoEvent
		}
		if err != nil {
			return fmt.Errorf("ingest: lock event for replay: %w", err)
		}
		if row.PayloadPrunedAt != nil {
			return ErrPayloadPruned
		}
		todos, err := r.todosOf(ctx, row)
		if err != nil {
			return err
		}
		if len(todos) == 0 {
			return ErrNoTarget
		}
		created, err := s.replayLocked(ctx, tx, r.HumanID, todos)
		out.Todos = created
		return err
	})
	if err != nil {
		return Replayed{}, err
	}
	s.todos.CommittedReplay(r.HumanID, out.Todos)
	out.Duplicate = true
	for _, t := range out.Todos {
		out.Duplicate = out.Duplicate && t.Existing
	}
	return out, nil
}

// ReplayFilter selects the events of a bulk replay; zero fields do not
// filter. Limit (≥ 1) bounds the events looked at.
type ReplayFilter struct {
	EndpointID, AdapterID         *uuid.UUID
	Topic                         string
	ReceivedAfter, ReceivedBefore *time.Time
	AfterID                       int64
	Limit                         int32
}

// ReplayCounts is what a bulk replay did.
type ReplayCounts struct {
	Replayed, AlreadyReplayed, SkippedPruned, SkippedNoTarget int32
	// LastEventID is the last event looked at (0: none matched).
	LastEventID int64
	// Looked is how many events were looked at (≤ Limit).
	Looked int32
}

// ReplayEvents replays f's events that r may read, oldest first, in
// transactions of at most replayChunk events each (locked in id order,
// replayed and recorded, committed, announced), skipping and counting those
// whose payload was pruned or that have no target. On an error the chunks
// before it stay replayed; a retry with the same Key does not repeat them.
func (s *Store) ReplayEvents(ctx context.Context, r Replay, f ReplayFilter) (ReplayCounts, error) {
	p := dbsqlc.EventsLockForReplayParams{
		HumanID: r.HumanID, CallerAgentID: r.AgentID, Topic: optional(f.Topic),
		ReceivedAfter: f.ReceivedAfter, ReceivedBefore: f.ReceivedBefore,
	}
	switch {
	case f.EndpointID != nil && f.AdapterID != nil:
		return ReplayCounts{}, nil // one event has one source
	case f.EndpointID != nil:
		p.Source = optional("endpoint:" + f.EndpointID.String())
	case f.AdapterID != nil:
		p.Source = optional("adapter:" + f.AdapterID.String())
	}
	c := ReplayCounts{LastEventID: f.AfterID}
	for c.Looked < f.Limit {
		p.AfterID, p.Chunk = c.LastEventID, min(replayChunk, f.Limit-c.Looked)
		n, err := s.replayChunk(ctx, r, p, &c)
		if err != nil {
			return c, err
		}
		if n < p.Chunk {
			break
		}
	}
	if c.Looked == 0 {
		c.LastEventID = 0
	}
	return c, nil
}

// replayChunk replays one chunk of a bulk replay in its own transaction and
// adds to c; it returns how many events it looked at.
func (s *Store) replayChunk(ctx context.Context, r Replay, p dbsqlc.EventsLockForReplayParams, c *ReplayCounts) (int32, error) {
	var created []queue.ReplayedTodo
	next := *c
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		next = *c
		rows, err := s.q.EventsLockForReplay(ctx, tx, p)
		if err != nil {
			return fmt.Errorf("ingest: lock events for replay: %w", err)
		}
		var todos []queue.ReplayTodo
		for _, row := range rows {
			next.Looked++
			next.LastEventID = row.ID
			if row.PayloadPrunedAt != nil {
				next.SkippedPruned++
				continue
			}
			ts, err := r.todosOf(ctx, ReplayRow(row))
			if err != nil {
				return err
			}
			if len(ts) == 0 {
				next.SkippedNoTarget++
			}
			todos = append(todos, ts...)
		}
		created, err = s.replayLocked(ctx, tx, r.HumanID, todos)
		return err
	})
	if err != nil {
		return 0, err
	}
	s.todos.CommittedReplay(r.HumanID, created)
	fresh := map[int64]bool{}
	seen := map[int64]bool{}
	for _, t := range created {
		seen[t.EventID] = true
		fresh[t.EventID] = fresh[t.EventID] || !t.Existing
	}
	for ev := range seen {
		if fresh[ev] {
			next.Replayed++
		} else {
			next.AlreadyReplayed++
		}
	}
	n := next.Looked - c.Looked
	*c = next
	return n, nil
}

// todosOf is the replay todos of a locked event: one per target.
func (r Replay) todosOf(ctx context.Context, row ReplayRow) ([]queue.ReplayTodo, error) {
	targets, err := r.Targets(ctx, row)
	if err != nil {
		return nil, err
	}
	out := make([]queue.ReplayTodo, 0, len(targets))
	for _, t := range targets {
		if t.Queue == "" {
			continue
		}
		td := queue.ReplayTodo{EventID: row.ID, Queue: t.Queue, AgentID: t.AgentID, Kind: t.Kind, Payload: t.Payload}
		if r.Key != "" {
			td.DedupeKey = "replay:" + strconv.FormatInt(row.ID, 10) + ":" + r.Key
		}
		out = append(out, td)
	}
	return out, nil
}

// replayLocked inserts the todos (through the queue's writer) in tx and
// records the replay on each event that got a new one.
func (s *Store) replayLocked(ctx context.Context, tx pgx.Tx, human uuid.UUID, todos []queue.ReplayTodo) ([]queue.ReplayedTodo, error) {
	created, err := s.todos.InsertReplayTodos(ctx, tx, human, todos)
	if err != nil {
		return nil, err
	}
	var ids []int64 // an event with several new todos may repeat: it is updated once
	for _, t := range created {
		if !t.Existing {
			ids = append(ids, t.EventID)
		}
	}
	if len(ids) == 0 {
		return created, nil
	}
	if err := s.q.EventMarkReplayed(ctx, tx, dbsqlc.EventMarkReplayedParams{HumanID: human, Ids: ids}); err != nil {
		return nil, fmt.Errorf("ingest: record replay: %w", err)
	}
	return created, nil
}

// OriginTodoTarget is where a published event's work went: the queue and
// agent of its oldest todo still kept; ok false when it has none.
func (s *Store) OriginTodoTarget(ctx context.Context, human uuid.UUID, event int64) (queue string, agent *uuid.UUID, ok bool, err error) {
	row, err := s.q.EventOldestTodoTarget(ctx, s.pool, dbsqlc.EventOldestTodoTargetParams{EventID: event, HumanID: human})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil, false, nil
	}
	if err != nil {
		return "", nil, false, fmt.Errorf("ingest: a published event's todo: %w", err)
	}
	return row.Queue, row.AgentID, true, nil
}
