package node

import (
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/services/ingest"
	"github.com/switchboard/switchboard/services/queue"
	"github.com/switchboard/switchboard/services/realtime"
)

// lifecycleEvents is where the node's services publish their lifecycle
// events (buildLifecycleEvents sets one of the two). Concrete pointers
// rather than an interface: through an interface call the fields closure
// would escape, so every todo change would allocate even with nobody
// listening; this way an unwatched channel stays map lookups only.
type lifecycleEvents struct {
	server    *realtime.Server          // the node runs realtime
	publisher *realtime.SystemPublisher // it does not
}

// System publishes one lifecycle event (see realtime.Server.System).
func (l lifecycleEvents) System(human uuid.UUID, agent *uuid.UUID, channel, kind string, fields func() map[string]any) {
	if l.server != nil {
		l.server.System(human, agent, channel, kind, fields)
		return
	}
	l.publisher.System(human, agent, channel, kind, fields)
}

// todoLifecycle publishes the queue's committed todo changes on the
// tenant's realtime channel sys:queue:<queue> (ephemeral; only where someone
// listens, and only to the todo's agent among agents: see
// realtime.Server.System), a todo's progress also on sys:todo:<id>, and the
// queue's own changes (queue.paused, queue.resumed, queue.limits) on
// sys:queue:<queue> to every listener of the tenant, and schedule.fired (a
// schedule's tick made the todo) beside the todo's todo.enqueued.
func todoLifecycle(rt lifecycleEvents) func(queue.TodoEvent) {
	channels, kinds := newNameMemo(realtime.QueueChannelPrefix), newNameMemo("todo.")
	return func(e queue.TodoEvent) {
		if e.Kind.QueueLevel() { // queue.paused, queue.resumed, queue.limits: about the queue, to everyone listening
			rt.System(e.HumanID, nil, channels.of(e.Queue), string(e.Kind), func() map[string]any {
				return map[string]any{"queue": e.Queue, "state": e.State}
			})
			return
		}
		fields := func() map[string]any {
			f := map[string]any{"todo_id": e.TodoID, "queue": e.Queue, "state": e.State}
			if e.AgentID != nil {
				f["agent_id"] = e.AgentID.String()
			}
			if e.Kind == queue.EventProgress {
				f["progress"], f["progress_at"] = e.Progress, e.ProgressAt.UTC().Format(time.RFC3339Nano)
			}
			return f
		}
		if e.Kind == queue.EventScheduleFired { // a schedule's tick made the todo (after its todo.enqueued)
			rt.System(e.HumanID, e.AgentID, channels.of(e.Queue), string(e.Kind), func() map[string]any {
				f := fields()
				f["schedule_id"], f["tick"] = e.ScheduleID.String(), e.Tick.UTC().Format(time.RFC3339)
				return f
			})
			return
		}
		kind := kinds.of(string(e.Kind))
		rt.System(e.HumanID, e.AgentID, channels.of(e.Queue), kind, fields)
		if e.Kind == queue.EventProgress {
			// Not memoized: one name per todo. Progress comes at most once per
			// heartbeat of a todo, not once per change of every todo.
			rt.System(e.HumanID, e.AgentID, realtime.TodoChannelPrefix+strconv.FormatInt(e.TodoID, 10), kind, fields)
		}
	}
}

// eventLifecycle publishes each newly stored inbound event on the tenant's
// realtime channel sys:ingest (to its agent, or every agent for shared work).
func eventLifecycle(rt lifecycleEvents) func(ingest.Received) {
	return func(e ingest.Received) {
		rt.System(e.HumanID, e.AgentID, realtime.IngestChannel, "event.received", func() map[string]any {
			return map[string]any{"event_id": e.EventID, "todo_id": e.TodoID, "source": e.Source, "topic": e.Topic}
		})
	}
}

// nameMemo remembers prefix+name per name, so publishing a todo change
// with nobody listening allocates nothing: the concatenation would, on
// every change. Bounded: past maxMemoNames names it concatenates.
type nameMemo struct {
	prefix string
	mu     sync.RWMutex
	m      map[string]string
}

const maxMemoNames = 4096

func newNameMemo(prefix string) *nameMemo {
	return &nameMemo{prefix: prefix, m: map[string]string{}}
}

func (n *nameMemo) of(name string) string {
	n.mu.RLock()
	s, ok := n.m[name]
	n.mu.RUnlock()
	if ok {
		return s
	}
	s = n.prefix + name
	n.mu.Lock()
	if len(n.m) < maxMemoNames {
		n.m[name] = s
	}
	n.mu.Unlock()
	return s
}
