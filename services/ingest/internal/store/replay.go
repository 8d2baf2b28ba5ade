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

// ReplayRow is a stored event as a replay reads it.
type ReplayRow = dbsqlc.EventForReplayRow

// Replay says how to replay events: for whom, with which idempotency key,
// and where each event's todos go.
type Replay struct {
	Reader
	// Key, when set, makes each event's todos idempotent per queue (the
	// todos' dedupe key "replay:<event id>:<Key>"): a retry creates none.
	Key string
	// Targets returns where row's todos go (with their kind and payload);
	// none skips the event (ErrNoTarget for ReplayEvent). It is called
	// before the replay's transaction, never while it holds locks or a
	// connection, so it may read through the pool.
	Targets func(ctx context.Context, row ReplayRow) ([]Target, error)
}

// Replayed is the outcome of replaying one event.
type Replayed struct {
	Todos []queue.ReplayedTodo
	// Duplicate: every todo already existed under the key; nothing written.
	Duplicate bool
}

// ReplayEvent creates the todos of a replay of event id and records it on
// the event, in one transaction that holds the event's row lock;
// ErrNoEvent when r may not read it, ErrPayloadPruned, ErrNoTarget. The
// created todos are announced after the commit.
func (s *Store) ReplayEvent(ctx context.Context, r Replay, id int64) (Replayed, error) {
	row, err := s.q.EventForReplay(ctx, s.pool, dbsqlc.EventForReplayParams{ID: id, HumanID: r.HumanID, CallerAgentID: r.AgentID})
	if errors.Is(err, pgx.ErrNoRows) {
		return Replayed{}, ErrNoEvent
	}
	if err != nil {
		return Replayed{}, fmt.Errorf("ingest: read event for replay: %w", err)
	}
	if row.PayloadPrunedAt != nil {
		return Replayed{}, ErrPayloadPruned
	}
	todos, err := r.todosOf(ctx, row)
	if err != nil {
		return Replayed{}, err
	}
	if len(todos) == 0 {
		return Replayed{}, ErrNoTarget
	}
	res, err := s.replayLocked(ctx, r.HumanID, todos)
	switch {
	case err != nil:
		return Replayed{}, err
	case len(res.gone) > 0:
		return Replayed{}, ErrNoEvent // removed by retention since it was read
	case len(res.pruned) > 0:
		return Replayed{}, ErrPayloadPruned
	}
	out := Replayed{Todos: res.todos, Duplicate: true}
	for _, t := range res.todos {
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

// ReplayEvents replays f's events that r may read, oldest first, at most
// replayChunk per transaction (read, their targets resolved, then locked in
// id order, replayed and recorded, committed, announced), skipping and
// counting those whose payload was pruned or that have no target. On an
// error the chunks before it stay replayed; a retry with the same Key does
// not repeat them.
func (s *Store) ReplayEvents(ctx context.Context, r Replay, f ReplayFilter) (ReplayCounts, error) {
	p := dbsqlc.EventsForReplayParams{
		HumanID: r.HumanID, CallerAgentID: r.AgentID, Topic: optional(f.Topic),
		ReceivedAfter: f.ReceivedAfter, ReceivedBefore: f.ReceivedBefore,
	}
	switch {
	case f.EndpointID != nil && f.AdapterID != nil:
		return ReplayCounts{}, nil // an event has one source
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

// replayChunk replays one chunk of a bulk replay and adds to c; it returns
// how many events it looked at.
func (s *Store) replayChunk(ctx context.Context, r Replay, p dbsqlc.EventsForReplayParams, c *ReplayCounts) (int32, error) {
	rows, err := s.q.EventsForReplay(ctx, s.pool, p)
	if err != nil {
		return 0, fmt.Errorf("ingest: read events for replay: %w", err)
	}
	next := *c
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
			return 0, err
		}
		if len(ts) == 0 {
			next.SkippedNoTarget++
		}
		todos = append(todos, ts...)
	}
	res, err := s.replayLocked(ctx, r.HumanID, todos)
	if err != nil {
		return 0, err
	}
	next.SkippedPruned += int32(len(res.pruned) + len(res.gone)) // gone: retention removed it since it was read
	fresh, seen := map[int64]bool{}, map[int64]bool{}
	for _, t := range res.todos {
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
	*c = next
	return int32(len(rows)), nil
}

// todosOf is the replay todos of an event: one per target.
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

// lockedReplay is what replayLocked did: the todos, and the events it
// dropped because retention removed them (gone) or their payload (pruned)
// after they were read.
type lockedReplay struct {
	todos        []queue.ReplayedTodo
	gone, pruned []int64
}

// replayLocked, in one transaction: locks the todos' events in id order,
// drops those removed or pruned since they were read, inserts the rest's
// todos through the queue's writer and records the replay on each event
// that got a new one; after the commit it announces the new todos.
func (s *Store) replayLocked(ctx context.Context, human uuid.UUID, todos []queue.ReplayTodo) (lockedReplay, error) {
	var out lockedReplay
	if len(todos) == 0 {
		return out, nil
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out = lockedReplay{}
		ids := make([]int64, 0, len(todos))
		for _, t := range todos {
			ids = append(ids, t.EventID)
		}
		locked, err := s.q.EventsLockForReplay(ctx, tx, dbsqlc.EventsLockForReplayParams{HumanID: human, Ids: ids})
		if err != nil {
			return fmt.Errorf("ingest: lock events for replay: %w", err)
		}
		ok := make(map[int64]bool, len(locked))
		for _, l := range locked {
			ok[l.ID] = l.PayloadPrunedAt == nil
			if l.PayloadPrunedAt != nil {
				out.pruned = append(out.pruned, l.ID)
			}
		}
		keep := todos[:0:0]
		for _, t := range todos {
			if _, found := ok[t.EventID]; !found && (len(out.gone) == 0 || out.gone[len(out.gone)-1] != t.EventID) {
				out.gone = append(out.gone, t.EventID)
			}
			if ok[t.EventID] {
				keep = append(keep, t)
			}
		}
		if out.todos, err = s.todos.InsertReplayTodos(ctx, tx, human, keep); err != nil {
			return err
		}
		var fresh []int64 // an event with several new todos repeats: it is updated once
		for _, t := range out.todos {
			if !t.Existing {
				fresh = append(fresh, t.EventID)
			}
		}
		if len(fresh) == 0 {
			return nil
		}
		if err := s.q.EventMarkReplayed(ctx, tx, dbsqlc.EventMarkReplayedParams{HumanID: human, Ids: fresh}); err != nil {
			return fmt.Errorf("ingest: record replay: %w", err)
		}
		return nil
	})
	if err != nil {
		return lockedReplay{}, err
	}
	s.todos.CommittedReplay(human, out.todos)
	return out, nil
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
