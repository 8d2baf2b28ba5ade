package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/services/queue/internal/store/dbsqlc"
)

// Dedupe scopes, as NewTodo.DedupeScope and todos.dedupe_scope store them.
const (
	// ScopeRetention holds the key until retention deletes the todo.
	ScopeRetention = ""
	// ScopeLive holds the key while the todo is pending or running.
	ScopeLive = "live"
	// ScopeWindow holds the key for DedupeWindow after the enqueue, in
	// todo_dedupe_windows rather than in the todo's own index.
	ScopeWindow = "window"
)

// keySpace names the space a dedupe key is unique in: RETENTION and LIVE
// todos share todos_dedup, WINDOW keys live in todo_dedupe_windows.
func keySpace(key string, scope *string) string {
	if scope != nil && *scope == ScopeWindow {
		return "window\x00" + key
	}
	return key
}

// reserveWindows takes the batch's WINDOW keys (the first entry of a key
// sets its window) and returns the ones this transaction took; nil when the
// batch has no WINDOW entry, so other batches pay nothing.
func (s *Store) reserveWindows(ctx context.Context, tx pgx.Tx, c Caller, queue string, items []NewTodo) (map[string]bool, error) {
	seconds := map[string]float64{}
	var keys []string
	for _, it := range items {
		if it.DedupeScope != ScopeWindow {
			continue
		}
		if _, seen := seconds[it.DedupeKey]; !seen {
			seconds[it.DedupeKey] = it.DedupeWindow.Seconds()
			keys = append(keys, it.DedupeKey)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	slices.Sort(keys) // byte order = the statement's "C" order (documentation only: it sorts too)
	windows := make([]float64, len(keys))
	for i, k := range keys {
		windows[i] = seconds[k]
	}
	taken, err := s.q.TodoDedupeWindowsReserve(ctx, tx, dbsqlc.TodoDedupeWindowsReserveParams{
		HumanID: c.HumanID, Queue: queue, Keys: keys, WindowSeconds: windows,
	})
	if err != nil {
		return nil, mapErr(err, "reserve dedupe windows", "")
	}
	won := make(map[string]bool, len(taken))
	for _, k := range taken {
		won[k] = true
	}
	return won, nil
}

// insertWindowed stores a batch with WINDOW entries whose keys reserveWindows
// settled: the entries that took their key are inserted with the rest of the
// batch (one TodoInsertBatch) and their windows pointed at them; the others
// answer with the todo that holds the window.
func (s *Store) insertWindowed(ctx context.Context, tx pgx.Tx, c Caller, queue string, items []NewTodo, won map[string]bool) ([]Enqueued, error) {
	out := make([]Enqueued, len(items))
	var keep []int // entries to insert, in request order
	var lost []string
	for i, it := range items {
		if it.DedupeScope == ScopeWindow {
			if !won[it.DedupeKey] {
				out[i].Duplicate = true
				lost = append(lost, it.DedupeKey)
				continue
			}
			won[it.DedupeKey] = false // a later entry with this key is a duplicate of this one
		}
		keep = append(keep, i)
	}
	if err := s.insertKept(ctx, tx, c, queue, items, keep, out); err != nil {
		return nil, err
	}
	if len(lost) == 0 {
		return out, nil
	}
	holders, err := s.q.TodoGetByDedupeWindows(ctx, tx, dbsqlc.TodoGetByDedupeWindowsParams{HumanID: c.HumanID, Queue: queue, Keys: lost})
	if err != nil {
		return nil, fmt.Errorf("get window duplicates: %w", err)
	}
	byKey := make(map[string]Todo, len(holders))
	for _, h := range holders {
		byKey[*h.DedupeKey] = h
	}
	for i, it := range items {
		if !out[i].Duplicate || it.DedupeScope != ScopeWindow {
			continue
		}
		h, ok := byKey[it.DedupeKey]
		if !ok {
			return nil, errHolderGone
		}
		out[i].Todo = h
	}
	return out, nil
}

// insertKept inserts items[keep] into out and links the windows the inserted
// WINDOW todos took.
func (s *Store) insertKept(ctx context.Context, tx pgx.Tx, c Caller, queue string, items []NewTodo, keep []int, out []Enqueued) error {
	if len(keep) == 0 {
		return nil
	}
	sub := make([]NewTodo, len(keep))
	for j, i := range keep {
		sub[j] = items[i]
	}
	res, err := s.insertRows(ctx, tx, c, queue, sub, insertParams(c, queue, sub))
	if err != nil {
		return err
	}
	var keys []string
	var ids []int64
	for j, i := range keep {
		out[i] = res[j]
		if sub[j].DedupeScope == ScopeWindow {
			keys, ids = append(keys, sub[j].DedupeKey), append(ids, res[j].Todo.ID)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	if err := s.q.TodoDedupeWindowsLink(ctx, tx, dbsqlc.TodoDedupeWindowsLinkParams{HumanID: c.HumanID, Queue: queue, Keys: keys, TodoIds: ids}); err != nil {
		return fmt.Errorf("link dedupe windows: %w", err)
	}
	return nil
}

// pruneWindows deletes expired WINDOW reservations in batches (queue
// retention): at most maxBatches statements of batch rows.
func (s *Store) pruneWindows(ctx context.Context, batch int32, maxBatches int) error {
	for range maxBatches {
		n, err := s.q.TodoDedupeWindowsPrune(ctx, s.pool, batch)
		if err != nil {
			return fmt.Errorf("prune dedupe windows: %w", err)
		}
		if n < int64(batch) {
			return nil
		}
	}
	return nil
}
