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

// windows is how a batch's WINDOW keys were settled: the keys this
// transaction took, and the todos that hold the others.
type windows struct {
	won     map[string]bool
	holders map[string]Todo
}

// reserveWindows settles the batch's WINDOW keys (the first entry of a key
// sets its window); nil when the batch has none, so other batches pay
// nothing. Keys it did not take stay locked to this transaction, so their
// holders, read next, are committed and stay put; a holder retention deleted
// ends its window, which is then taken over.
func (s *Store) reserveWindows(ctx context.Context, tx pgx.Tx, c Caller, queue string, items []NewTodo) (*windows, error) {
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
	slices.Sort(keys) // byte order = the statement's "C" order
	taken, err := s.q.TodoDedupeWindowsReserve(ctx, tx, dbsqlc.TodoDedupeWindowsReserveParams{
		HumanID: c.HumanID, Queue: queue, Keys: keys, WindowSeconds: secondsOf(keys, seconds),
	})
	if err != nil {
		return nil, mapErr(err, "reserve dedupe windows", "")
	}
	w := &windows{won: make(map[string]bool, len(keys)), holders: map[string]Todo{}}
	for _, k := range taken {
		w.won[k] = true
	}
	lost := slices.DeleteFunc(keys, func(k string) bool { return w.won[k] })
	if len(lost) == 0 {
		return w, nil
	}
	held, err := s.q.TodoGetByDedupeWindows(ctx, tx, dbsqlc.TodoGetByDedupeWindowsParams{HumanID: c.HumanID, Queue: queue, Keys: lost})
	if err != nil {
		return nil, fmt.Errorf("get window duplicates: %w", err)
	}
	for _, h := range held {
		w.holders[*h.DedupeKey] = h
	}
	gone := slices.DeleteFunc(lost, func(k string) bool { _, ok := w.holders[k]; return ok })
	if len(gone) == 0 {
		return w, nil
	}
	taken, err = s.q.TodoDedupeWindowsTakeOver(ctx, tx, dbsqlc.TodoDedupeWindowsTakeOverParams{
		HumanID: c.HumanID, Queue: queue, Keys: gone, WindowSeconds: secondsOf(gone, seconds),
	})
	if err != nil {
		return nil, fmt.Errorf("take over dedupe windows: %w", err)
	}
	for _, k := range taken {
		w.won[k] = true
	}
	return w, nil
}

func secondsOf(keys []string, seconds map[string]float64) []float64 {
	out := make([]float64, len(keys))
	for i, k := range keys {
		out[i] = seconds[k]
	}
	return out
}

// insertWindowed stores a batch whose WINDOW keys reserveWindows settled:
// the first entry of each key this transaction took is inserted with the rest
// of the batch (one TodoInsertBatch) and its window pointed at it; the other
// WINDOW entries answer with their key's holder.
func (s *Store) insertWindowed(ctx context.Context, tx pgx.Tx, c Caller, queue string, items []NewTodo, w *windows) ([]Enqueued, error) {
	out := make([]Enqueued, len(items))
	first := map[string]int{} // key → the entry that takes it
	var keep []int            // entries to insert, in request order
	for i, it := range items {
		if it.DedupeScope == ScopeWindow {
			if _, seen := first[it.DedupeKey]; seen || !w.won[it.DedupeKey] {
				continue
			}
			first[it.DedupeKey] = i
		}
		keep = append(keep, i)
	}
	if err := s.insertKept(ctx, tx, c, queue, items, keep, out); err != nil {
		return nil, err
	}
	for i, it := range items {
		if it.DedupeScope != ScopeWindow || first[it.DedupeKey] == i && w.won[it.DedupeKey] {
			continue
		}
		h, ok := w.holders[it.DedupeKey]
		if w.won[it.DedupeKey] {
			h, ok = out[first[it.DedupeKey]].Todo, true
		}
		if !ok {
			return nil, errHolderGone // a holder deleted and taken over at once: rare; run again
		}
		out[i] = Enqueued{Todo: h, Duplicate: true}
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
