package queue

import (
	"context"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/textcheck"
	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// PauseQueue pauses a queue: its claims hand out nothing on every node (the
// claim statement itself checks queue_controls) until ResumeQueue. Running
// todos are untouched and Enqueue keeps working. queue.paused is emitted
// only by the call that paused it, so a retried or racing pause emits once.
func (s *Server) PauseQueue(ctx context.Context, req *queuev1.PauseQueueRequest) (*queuev1.PauseQueueResponse, error) {
	c, err := callerOfQueue(ctx, req.GetQueue())
	if err != nil {
		return nil, err
	}
	ctl, changed, err := s.store.Pause(ctx, c, req.GetQueue())
	if err != nil {
		return nil, err
	}
	if changed {
		s.todos.emitEvent(TodoEvent{Kind: EventPaused, HumanID: c.HumanID, Queue: req.GetQueue(), State: queueStatePaused})
	}
	return &queuev1.PauseQueueResponse{Control: controlProto(req.GetQueue(), ctl)}, nil
}

// ResumeQueue lets a paused queue hand out work again and wakes the claims
// waiting on it: every waiter of this node at once, the other nodes' through
// the coalesced pg_notify an enqueue sends (their poll tick is the fallback).
func (s *Server) ResumeQueue(ctx context.Context, req *queuev1.ResumeQueueRequest) (*queuev1.ResumeQueueResponse, error) {
	c, err := callerOfQueue(ctx, req.GetQueue())
	if err != nil {
		return nil, err
	}
	ctl, changed, err := s.store.Resume(ctx, c, req.GetQueue())
	if err != nil {
		return nil, err
	}
	if changed {
		s.todos.emitEvent(TodoEvent{Kind: EventResumed, HumanID: c.HumanID, Queue: req.GetQueue(), State: queueStateRunning})
		s.todos.resumed(c.HumanID, req.GetQueue())
	}
	return &queuev1.ResumeQueueResponse{Control: controlProto(req.GetQueue(), ctl)}, nil
}

// The State of a queue-level TodoEvent.
const (
	queueStatePaused  = "paused"
	queueStateRunning = "running"
)

// callerOfQueue is callerIn that also checks the queue name's pattern: a
// write about a queue must not answer for a name no todo can have (the
// interceptor checks it too; the handler must be safe without it).
func callerOfQueue(ctx context.Context, queue string) (store.Caller, error) {
	c, err := callerIn(ctx, queue)
	if err == nil && !textcheck.QueueName(queue) {
		err = invalid("queue", "must match ^[a-z0-9][a-z0-9._-]{0,62}$")
	}
	return c, err
}

func controlProto(queue string, c store.Control) *queuev1.QueueControl {
	return &queuev1.QueueControl{
		Queue: queue, Paused: c.Paused, PausedAt: timestamp(c.PausedAt), UpdatedAt: timestamp(c.UpdatedAt),
		Limits: limitsProto(c.Limits, c.Running, c.LimitsAt),
	}
}

// ListQueues lists the tenant's queues by name with their depth by state
// and pause flag, keyset-paginated on the name.
func (s *Server) ListQueues(ctx context.Context, req *queuev1.ListQueuesRequest) (*queuev1.ListQueuesResponse, error) {
	c, limit, after, err := namePageArgs(ctx, req, "ListQueues")
	if err != nil {
		return nil, err
	}
	rows, err := s.store.ListQueues(ctx, c, after, limit+1)
	if err != nil {
		return nil, err
	}
	out := &queuev1.ListQueuesResponse{}
	rows, out.NextPageToken = cutNamePage(rows, limit, func(r store.QueueSummary) string { return r.Queue })
	out.Queues = make([]*queuev1.QueueSummary, len(rows))
	for i, r := range rows {
		out.Queues[i] = &queuev1.QueueSummary{
			Queue: r.Queue, Paused: r.Paused, PendingReady: r.PendingReady, PendingScheduled: r.PendingScheduled,
			Running: r.Running, Completed: r.Completed, Dead: r.Dead, Cancelled: r.Cancelled,
			OldestPendingAgeSeconds: r.OldestPendingAgeSeconds, Limits: limitsProto(r.Limits, r.LimitRunning, r.LimitsAt),
		}
	}
	return out, nil
}
