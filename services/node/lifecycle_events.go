package node

import (
	"github.com/switchboard/switchboard/services/ingest"
	"github.com/switchboard/switchboard/services/queue"
	"github.com/switchboard/switchboard/services/realtime"
)

// todoLifecycle publishes the queue's committed todo changes on the
// tenant's realtime channel sys:queue:<queue> (ephemeral; only where someone
// listens, and only to the todo's agent among agents: see
// realtime.Server.System).
func todoLifecycle(rt *realtime.Server) func(queue.TodoEvent) {
	return func(e queue.TodoEvent) {
		rt.System(e.HumanID, e.AgentID, realtime.QueueChannelPrefix+e.Queue, "todo."+string(e.Kind), func() map[string]any {
			fields := map[string]any{"todo_id": e.TodoID, "queue": e.Queue, "state": e.State}
			if e.AgentID != nil {
				fields["agent_id"] = e.AgentID.String()
			}
			return fields
		})
	}
}

// eventLifecycle publishes each newly stored inbound event on the tenant's
// realtime channel sys:ingest (to its agent, or every agent for shared work).
func eventLifecycle(rt *realtime.Server) func(ingest.Received) {
	return func(e ingest.Received) {
		rt.System(e.HumanID, e.AgentID, realtime.IngestChannel, "event.received", func() map[string]any {
			return map[string]any{"event_id": e.EventID, "todo_id": e.TodoID, "source": e.Source, "topic": e.Topic}
		})
	}
}
