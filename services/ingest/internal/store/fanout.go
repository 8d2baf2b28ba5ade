package store

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/switchboard/switchboard/services/queue"
)

// QueuedTodo is one new todo of an event and the queue it is in (what
// queue.Todos.Committed announces it to).
type QueuedTodo struct {
	Queue string
	Todo  queue.EventTodo
}

// sortedTargets is targets with a queue, sorted by queue, agent, kind and
// payload (a copy: the caller's slice is left alone).
func sortedTargets(targets []Target) []Target {
	out := make([]Target, 0, len(targets))
	for _, t := range targets {
		if t.Queue != "" {
			out = append(out, t)
		}
	}
	slices.SortStableFunc(out, func(a, b Target) int {
		return cmp.Or(cmp.Compare(a.Queue, b.Queue), compareAgents(a, b), cmp.Compare(a.Kind, b.Kind), bytes.Compare(a.Payload, b.Payload))
	})
	return out
}

// compareAgents orders targets by agent, unaddressed first.
func compareAgents(a, b Target) int {
	switch {
	case a.AgentID == nil || b.AgentID == nil:
		return cmp.Compare(boolInt(a.AgentID != nil), boolInt(b.AgentID != nil))
	default:
		return bytes.Compare(a.AgentID[:], b.AgentID[:])
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// attachTodos gives each stored (not duplicate) event of out its todo among
// created, the todos one target's insert returned.
func attachTodos(out []Stored, queueName string, created []queue.EventTodo) {
	byEvent := make(map[int64]*queue.EventTodo, len(created))
	for i := range created {
		byEvent[created[i].EventID] = &created[i]
	}
	for i := range out {
		td := byEvent[out[i].EventID]
		if td == nil || out[i].Duplicate {
			continue
		}
		out[i].Todos = append(out[i].Todos, QueuedTodo{Queue: queueName, Todo: *td})
	}
}
