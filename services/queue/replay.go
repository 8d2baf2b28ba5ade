package queue

import (
	"context"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// ReplayTodo is one todo of a replay of a stored event (see
// InsertReplayTodos).
type ReplayTodo = store.ReplayTodo

// ReplayedTodo is a todo a replay created, or (Existing) found under its
// dedupe key.
type ReplayedTodo = store.ReplayedTodo

// InsertReplayTodos inserts, in tx (the caller's transaction, which stores
// the replay's record on the events), the todos of a replay of human's
// stored events, each with its event's trace context; entries whose dedupe
// key their queue already holds insert nothing and come back Existing. The
// caller vouches for the agents (ingest checks an override like
// PublishEvent's) and announces the created todos with CommittedReplay
// after the commit.
func (t *Todos) InsertReplayTodos(ctx context.Context, tx pgx.Tx, human uuid.UUID, todos []ReplayTodo) ([]ReplayedTodo, error) {
	return t.store.InsertReplayTodos(ctx, tx, human, todos)
}

// CommittedReplay announces the todos InsertReplayTodos created (not the
// Existing ones), queue by queue, exactly as after an Enqueue.
func (t *Todos) CommittedReplay(human uuid.UUID, todos []ReplayedTodo) {
	byQueue := map[string][]EventTodo{}
	for _, td := range todos {
		if !td.Existing {
			byQueue[td.Queue] = append(byQueue[td.Queue], td.EventTodo)
		}
	}
	queues := make([]string, 0, len(byQueue))
	for q := range byQueue {
		queues = append(queues, q)
	}
	slices.Sort(queues)
	for _, q := range queues {
		t.Committed(human, q, byQueue[q])
	}
}
