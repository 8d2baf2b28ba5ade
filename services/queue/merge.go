package queue

import (
	"context"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/pkg/groupcommit"
	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// merger turns concurrent single-item writes (Complete, Heartbeat) into
// fenced batch statements (TodoSettle, TodoHeartbeatBatch): group
// commit for the hot path (see pkg/groupcommit for how a flush is shaped).
// Each caller still gets its own item's outcome, and returns only after the
// statement that carried its item committed (every batch statement is its
// own transaction).
//
// Items are grouped by caller, because the batch SQL scopes the whole
// statement to one human_id and caller_agent_id, and identified by todo id:
// a todo appears once per flush and rows are locked in id order.
type merger[I, R any] = groupcommit.Batcher[callerKey, I, R]

// newMerger returns the merger named name over exec (a store batch write),
// shaped by the MergeWindow and MergeMaxItems of o; id is the todo an item
// writes.
func newMerger[I, R any](name string, o Options, exec func(context.Context, store.Caller, []I) ([]R, error),
	id func(I) int64,
) *merger[I, R] {
	return groupcommit.New(name, func(ctx context.Context, k callerKey, items []I) ([]R, error) {
		return exec(ctx, k.caller(), items)
	}, groupcommit.Options[I]{
		Window: o.MergeWindow, MaxItems: o.MergeMaxItems, ID: id, OnFlush: o.Metrics.GroupCommitObserver(name),
	})
}

// callerKey is a store.Caller as a map key: the agent by value, since
// equal callers carry distinct AgentID pointers.
type callerKey struct {
	human    uuid.UUID
	agent    uuid.UUID
	hasAgent bool
}

func keyOf(c store.Caller) callerKey {
	k := callerKey{human: c.HumanID}
	if c.AgentID != nil {
		k.agent, k.hasAgent = *c.AgentID, true
	}
	return k
}

func (k callerKey) caller() store.Caller {
	c := store.Caller{HumanID: k.human}
	if k.hasAgent {
		c.AgentID = &k.agent
	}
	return c
}
