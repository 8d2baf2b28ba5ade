package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/queue/internal/store/dbsqlc"
)

// EventTodos names the todos of the events one transaction stores: the
// events' tenant and source, and where their todos go.
type EventTodos struct {
	HumanID uuid.UUID
	Source  string
	Queue   string
	AgentID *uuid.UUID
	Kind    string
	// KindFromTopic makes each todo's kind its event's topic, Kind where
	// the topic is empty: one statement carries events of mixed topics
	// (the webhook edge's group commit).
	KindFromTopic bool
	// Payload is each todo's payload (a JSON object); nil is a reference to
	// its event.
	Payload []byte
}

// EventTodo is a todo QueueEventTodos created.
type EventTodo struct {
	ID      int64
	EventID int64
	AgentID *uuid.UUID
	State   string
}

// QueueEventTodos queues TodoInsertForEvents on db, the caller's pipeline
// (postgres.Pipeline), after the events' own insert; the returned function
// reads the todos, in event order, once the pipeline is sent.
func (s *Store) QueueEventTodos(ctx context.Context, db dbsqlc.DBTX, e EventTodos) func() ([]EventTodo, error) {
	res := s.q.TodoInsertForEvents(ctx, db, []dbsqlc.TodoInsertForEventsParams{{
		Queue: e.Queue, AgentID: e.AgentID, Kind: e.Kind, KindFromTopic: e.KindFromTopic, Payload: e.Payload,
		DefaultMaxAttempts: settings.DefaultQueue.MaxAttempts, HumanID: e.HumanID, Source: e.Source,
	}})
	return func() ([]EventTodo, error) {
		var rows []dbsqlc.TodoInsertForEventsRow
		var err error
		res.Query(func(_ int, r []dbsqlc.TodoInsertForEventsRow, e error) { rows, err = r, e })
		if err != nil {
			return nil, mapErr(err, "insert event todos", "agent")
		}
		out := make([]EventTodo, len(rows))
		for i, r := range rows {
			out[i] = EventTodo{ID: r.ID, AgentID: r.AgentID, State: r.State}
			if r.EventID != nil {
				out[i].EventID = *r.EventID
			}
		}
		return out, nil
	}
}
