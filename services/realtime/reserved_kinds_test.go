package realtime_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/queue"
	"github.com/switchboard/switchboard/services/realtime"
)

// TestEveryKindTheServicesSendIsReserved keeps kinds.go in step with the
// services that publish lifecycle events: each kind they send (as
// services/node names them: "todo."+kind for a todo's change, a queue's or
// a schedule's own kind as it is, event.received for ingest) is one a
// client may not publish. (Server.System drops any other, so a miss here
// would also show as a lifecycle event that never arrives.)
func TestEveryKindTheServicesSendIsReserved(t *testing.T) {
	t.Parallel()
	sent := []string{realtime.KindPresenceJoin, realtime.KindPresenceLeave, "event.received",
		string(queue.EventScheduleFired), string(queue.EventPaused), string(queue.EventResumed), string(queue.EventLimits)}
	for _, k := range []queue.EventKind{
		queue.EventEnqueued, queue.EventClaimed, queue.EventCompleted, queue.EventFailed, queue.EventReleased,
		queue.EventCancelled, queue.EventExpired, queue.EventRedriven, queue.EventRetried, queue.EventProgress,
	} {
		sent = append(sent, "todo."+string(k))
	}
	for _, k := range sent {
		require.True(t, realtime.ReservedKind(k), k)
	}
	for _, k := range []string{"", "message", "typing", "presence", "todos.x", "eventual", "x.todo.y"} {
		require.False(t, realtime.ReservedKind(k), k)
	}
}
