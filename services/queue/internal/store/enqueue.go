package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/postgres"
	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/queue/internal/store/dbsqlc"
)

// NewTodo is one todo to enqueue. Zero values mean "none" or "default".
type NewTodo struct {
	AgentID *uuid.UUID
	EventID int64
	Kind    string
	// Payload is a JSON object.
	Payload  []byte
	Priority int32
	// MaxAttempts 0 means the setting queue.defaults.max_attempts.
	MaxAttempts int32
	// RunAt zero (or in the past) means now() on the database clock.
	RunAt     time.Time
	DedupeKey string
	// DedupeScope is how long DedupeKey refuses duplicates: ScopeRetention,
	// ScopeLive or ScopeWindow (for DedupeWindow, 1 s to 30 days).
	DedupeScope  string
	DedupeWindow time.Duration
	// TraceParent is the W3C traceparent of the request that creates the
	// todo (tracing.TraceParent); "" for none.
	TraceParent string
	// ConcurrencyKey is the todo's concurrency key; "" for none.
	ConcurrencyKey string
	// RemoveOnComplete deletes the todo when it completes.
	RemoveOnComplete bool
}

// Enqueued is one stored todo: created now, or an existing one that already
// held the dedupe key (Duplicate).
type Enqueued struct {
	Todo      Todo
	Duplicate bool
}

// Enqueue stores todos in queue for the caller, in one transaction: the
// reference check, one INSERT for the whole batch, and one lookup of the
// duplicates. Either every todo is stored (or recognised as a duplicate) or
// nothing is. The result is in request order. An agent_id that is not the
// caller's tenant's, or an event_id the caller could not read with GetEvent
// (another tenant's, or for an agent another agent's), is NOT_FOUND naming
// the entry's index, in the same words as a missing one. The insert
// takes its dedupe keys in one order (see TodoInsertBatch), so concurrent
// batches do not deadlock; a conflict that still aborts the transaction is
// retried here, and so is a duplicate whose holder finished (LIVE) or was
// deleted between the insert and the lookup.
func (s *Store) Enqueue(ctx context.Context, c Caller, queue string, items []NewTodo) ([]Enqueued, error) {
	var out []Enqueued
	var err error
	for attempt := range holderAttempts {
		err = postgres.RetryConflicts(ctx, func() error { return s.enqueueTx(ctx, c, queue, items, &out) })
		if !errors.Is(err, errHolderGone) || attempt == holderAttempts-1 {
			break
		}
		// A short, random pause: runs that follow a churning holder in
		// lockstep (a worker completing it as fast as it is claimed) keep
		// missing it.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(1+rand.IntN(4)) * time.Millisecond): //nolint:gosec // jitter, not a secret
		}
	}
	if errors.Is(err, errHolderGone) {
		return nil, apierr.Unavailable("the todo holding a dedupe_key changed concurrently; retry")
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// holderAttempts bounds Enqueue's runs when a duplicate's holder vanishes
// between the insert and its lookup (each run sees the newer state). Three
// were not always enough: TestDedupeLiveChurn (three nodes enqueueing one
// LIVE key while a worker completes each holder at once) saw all three miss
// once in about ten runs of the suite on the test cluster, whose commits do
// not wait for the disk.
const holderAttempts = 10

// errHolderGone: a duplicate's holder was gone by the time it was looked up
// (a LIVE holder finished, or retention deleted it); running the enqueue
// again inserts the todo or finds the new holder.
var errHolderGone = errors.New("dedupe key holder changed concurrently")

func (s *Store) enqueueTx(ctx context.Context, c Caller, queue string, items []NewTodo, out *[]Enqueued) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		p := insertParams(c, queue, items)
		if refs(items) {
			bad, err := s.q.TodoCheckRefs(ctx, tx, dbsqlc.TodoCheckRefsParams{
				AgentIds: p.AgentIds, EventIds: p.EventIds, HumanID: c.HumanID, CallerAgentID: c.AgentID,
			})
			if err != nil {
				return fmt.Errorf("check references: %w", err)
			}
			if bad > 0 {
				return apierr.NotFound("request %d: agent_id or event_id not found", bad-1)
			}
		}
		var err error
		*out, err = s.insert(ctx, tx, c, queue, items, p)
		return err
	})
}

// insert stores items after the references are checked. A batch without
// WINDOW entries is one statement; one with them reserves its windows first
// (insertWindowed).
func (s *Store) insert(ctx context.Context, tx pgx.Tx, c Caller, queue string, items []NewTodo, p dbsqlc.TodoInsertBatchParams) ([]Enqueued, error) {
	w, err := s.reserveWindows(ctx, tx, c, queue, items)
	if err != nil {
		return nil, err
	}
	if w == nil {
		return s.insertRows(ctx, tx, c, queue, items, p)
	}
	return s.insertWindowed(ctx, tx, c, queue, items, w)
}

// insertRows runs TodoInsertBatch and pairs its rows with items.
func (s *Store) insertRows(ctx context.Context, tx pgx.Tx, c Caller, queue string, items []NewTodo, p dbsqlc.TodoInsertBatchParams) ([]Enqueued, error) {
	rows, err := s.q.TodoInsertBatch(ctx, tx, p)
	if err != nil {
		return nil, mapErr(err, "insert todos", "agent or event")
	}
	return s.match(ctx, tx, c, queue, items, rows)
}

// insertParams encodes items as TodoInsertBatch's parallel arrays.
func insertParams(c Caller, queue string, items []NewTodo) dbsqlc.TodoInsertBatchParams {
	p := dbsqlc.TodoInsertBatchParams{
		HumanID: c.HumanID, Queue: queue, DefaultMaxAttempts: settings.DefaultQueue.MaxAttempts,
		AgentIds: make([]string, len(items)), EventIds: make([]int64, len(items)),
		Kinds: make([]string, len(items)), Payloads: make([]string, len(items)),
		Priorities: make([]int32, len(items)), MaxAttempts: make([]int32, len(items)),
		RunAts: make([]time.Time, len(items)), DedupeKeys: make([]string, len(items)),
		TraceParents: make([]string, len(items)), DedupeScopes: make([]string, len(items)),
		ConcurrencyKeys: make([]string, len(items)), RemoveOnCompletes: make([]bool, len(items)),
	}
	for i, it := range items {
		if it.AgentID != nil {
			p.AgentIds[i] = it.AgentID.String()
		}
		p.EventIds[i], p.Kinds[i], p.Payloads[i] = it.EventID, it.Kind, string(it.Payload)
		p.Priorities[i], p.MaxAttempts[i], p.RunAts[i], p.DedupeKeys[i] = it.Priority, it.MaxAttempts, it.RunAt, it.DedupeKey
		p.TraceParents[i], p.DedupeScopes[i], p.ConcurrencyKeys[i] = it.TraceParent, it.DedupeScope, it.ConcurrencyKey
		p.RemoveOnCompletes[i] = it.RemoveOnComplete
	}
	return p
}

// refs reports whether any item names an agent or an event.
func refs(items []NewTodo) bool {
	for _, it := range items {
		if it.AgentID != nil || it.EventID != 0 {
			return true
		}
	}
	return false
}

// match pairs request entries with the inserted rows and looks up the
// duplicates. Keyed entries match by dedupe key (unique per queue and key
// space, see keySpace; the first entry with a key is the one that could have
// been inserted; WINDOW entries reach here only when they took their key).
// Unkeyed entries are always inserted, in request order, so they take the
// unkeyed rows in ascending id order.
func (s *Store) match(ctx context.Context, tx pgx.Tx, c Caller, queue string, items []NewTodo, rows []Todo) ([]Enqueued, error) {
	byKey := map[string]Todo{}
	var unkeyed []Todo
	for _, r := range rows {
		if r.DedupeKey != nil {
			byKey[keySpace(*r.DedupeKey, r.DedupeScope)] = r
		} else {
			unkeyed = append(unkeyed, r)
		}
	}
	slices.SortFunc(unkeyed, func(a, b Todo) int { return cmp.Compare(a.ID, b.ID) })
	out := make([]Enqueued, len(items))
	claimed := map[string]bool{} // keys already handed to an earlier entry as "created"
	var lookup []string
	for i, it := range items {
		if it.DedupeKey == "" {
			if len(unkeyed) == 0 {
				return nil, fmt.Errorf("enqueue: fewer rows inserted than unkeyed entries")
			}
			out[i], unkeyed = Enqueued{Todo: unkeyed[0]}, unkeyed[1:]
			continue
		}
		k := keySpace(it.DedupeKey, &it.DedupeScope)
		if r, ok := byKey[k]; ok && !claimed[k] {
			out[i] = Enqueued{Todo: r}
			claimed[k] = true
			continue
		}
		out[i].Duplicate = true
		lookup = append(lookup, it.DedupeKey)
	}
	if len(lookup) == 0 {
		return out, nil
	}
	existing, err := s.q.TodoGetByDedupeKeys(ctx, tx, dbsqlc.TodoGetByDedupeKeysParams{HumanID: c.HumanID, Queue: queue, DedupeKeys: lookup})
	if err != nil {
		return nil, fmt.Errorf("get duplicates: %w", err)
	}
	for _, r := range existing {
		byKey[*r.DedupeKey] = r
	}
	for i, it := range items {
		if !out[i].Duplicate {
			continue
		}
		r, ok := byKey[it.DedupeKey]
		if !ok {
			// The holder finished (LIVE) or was deleted (retention) between
			// the insert and the lookup: Enqueue runs again.
			return nil, errHolderGone
		}
		out[i].Todo = r
	}
	return out, nil
}
