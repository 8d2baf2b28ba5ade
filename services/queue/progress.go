package queue

import (
	"context"

	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// maxProgressBytes bounds HeartbeatRequest.progress ("at most 1 KiB
// serialized"): progress rides on heartbeats, which must stay HOT updates,
// and a row version that small always fits the page's fillfactor slack.
const maxProgressBytes = 1 << 10

// progressed emits todo.progress for a heartbeat item that carried progress
// and was applied (its lease matched): after the statement committed, so a
// subscriber never sees progress that a reader of the todo could not. A
// stale item stored nothing and emits nothing.
func (s *Server) progressed(ctx context.Context, it store.HeartbeatItem, r store.HeartbeatResult) {
	if it.Progress == nil || r.Outcome != store.OK || r.ProgressAt == nil {
		return
	}
	c, err := caller(ctx)
	if err != nil {
		return // cannot happen: the heartbeat was authorized by it
	}
	s.todos.emitEvent(TodoEvent{
		Kind: EventProgress, TodoID: it.ID, HumanID: c.HumanID, Queue: r.Queue, AgentID: r.AgentID,
		State: "running", Progress: it.Progress, ProgressAt: *r.ProgressAt,
	})
}
