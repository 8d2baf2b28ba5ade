package settings

import (
	"context"
	"fmt"
)

// Prune is one table's retention under a retention.* setting: rows older
// than the age bound, then the oldest beyond the row cap (both bounds apply
// together: either alone leaves the other dimension unbounded). Each rule
// deletes in bounded batches, each its own short statement that skips rows
// another node holds, so every node can prune at once; at most MaxBatches
// of each per pass, so a backlog is worked off over several passes instead
// of one long burst.
type Prune struct {
	// Key is the setting (RetentionTodos, …) and Default its value when the
	// row is missing.
	Key     string
	Default Retention
	// ByAge and OverCap delete up to batch rows and return how many.
	ByAge   func(ctx context.Context, r Retention, batch int32) (int64, error)
	OverCap func(ctx context.Context, r Retention, batch int32) (int64, error)
	// Batch bounds one statement; MaxBatches one pass of each rule.
	Batch      int32
	MaxBatches int
}

// Once reads the setting and applies it now; it returns how many rows went.
func (p Prune) Once(ctx context.Context, db DB) (int64, error) {
	r, err := Read(ctx, db, p.Key, p.Default)
	if err != nil {
		return 0, err
	}
	var total int64
	for i, rule := range []func(context.Context, Retention, int32) (int64, error){p.ByAge, p.OverCap} {
		for range p.MaxBatches {
			n, err := rule(ctx, r, p.Batch)
			total += n
			if err != nil {
				return total, fmt.Errorf("%s: prune %s: %w", p.Key, [...]string{"by age", "over the row cap"}[i], err)
			}
			if n < int64(p.Batch) {
				break
			}
		}
	}
	return total, nil
}
