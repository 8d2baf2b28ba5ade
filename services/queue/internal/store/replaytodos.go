package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/queue/internal/store/dbsqlc"
)

// ReplayTodo is one todo of a replay of a stored event.
type ReplayTodo struct {
	EventID int64
	Queue   string
	AgentID *uuid.UUID
	Kind    string
	// Payload is the todo's payload (a JSON object); nil is a reference to
	// the event, as an event's first todo holds.
	Payload []byte
	// DedupeKey, when set, makes the insert idempotent within the queue: a
	// todo that already holds it is answered instead ("" = none).
	DedupeKey string
}

// ReplayedTodo is a todo of a replay: created now, or (Existing) found
// under its dedupe key.
type ReplayedTodo struct {
	EventTodo
	Queue     string
	DedupeKey string
	Existing  bool
}

// InsertReplayTodos inserts todos for stored events of human on db (the
// caller's transaction) and returns them with those found under their
// dedupe keys, created first. An event of another tenant gets nothing.
func (s *Store) InsertReplayTodos(ctx context.Context, db dbsqlc.DBTX, human uuid.UUID, todos []ReplayTodo) ([]ReplayedTodo, error) {
	if len(todos) == 0 {
		return nil, nil
	}
	p := dbsqlc.TodoInsertForReplayParams{
		HumanID: human, DefaultMaxAttempts: settings.DefaultQueue.MaxAttempts,
		EventIds: make([]int64, len(todos)), Queues: make([]string, len(todos)), AgentIds: make([]string, len(todos)),
		Kinds: make([]string, len(todos)), Payloads: make([]string, len(todos)), DedupeKeys: make([]string, len(todos)),
	}
	for i, t := range todos {
		p.EventIds[i], p.Queues[i], p.Kinds[i], p.Payloads[i], p.DedupeKeys[i] = t.EventID, t.Queue, t.Kind, string(t.Payload), t.DedupeKey
		if t.AgentID != nil {
			p.AgentIds[i] = t.AgentID.String()
		}
	}
	rows, err := s.q.TodoInsertForReplay(ctx, db, p)
	if err != nil {
		return nil, mapErr(err, "insert replay todos", "agent")
	}
	out := make([]ReplayedTodo, 0, len(todos))
	inserted := make(map[[2]string]bool, len(rows))
	for _, r := range rows {
		out = append(out, replayed(r.ID, r.EventID, r.AgentID, r.State, r.Queue, r.DedupeKey, false))
		inserted[[2]string{r.Queue, r.DedupeKey}] = true
	}
	var queues, keys []string
	for _, t := range todos {
		if t.DedupeKey != "" && !inserted[[2]string{t.Queue, t.DedupeKey}] {
			queues, keys = append(queues, t.Queue), append(keys, t.DedupeKey)
		}
	}
	if len(keys) == 0 {
		return out, nil
	}
	found, err := s.q.TodoGetReplayed(ctx, db, dbsqlc.TodoGetReplayedParams{HumanID: human, Queues: queues, DedupeKeys: keys})
	if err != nil {
		return nil, mapErr(err, "get replayed todos", "todo")
	}
	for _, r := range found {
		out = append(out, replayed(r.ID, r.EventID, r.AgentID, r.State, r.Queue, r.DedupeKey, true))
	}
	return out, nil
}

func replayed(id int64, event *int64, agent *uuid.UUID, state, queue, key string, existing bool) ReplayedTodo {
	t := ReplayedTodo{EventTodo: EventTodo{ID: id, AgentID: agent, State: state}, Queue: queue, DedupeKey: key, Existing: existing}
	if event != nil {
		t.EventID = *event
	}
	return t
}
