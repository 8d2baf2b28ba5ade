//go:build integration

package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/realtime"
)

// TestQueueOnlyNodePublishesLifecycleEventsOverNotify: in a split topology
// the queue runs on a node without realtime; a dashboard subscribed to
// sys:queue:<q> on the realtime node still sees its todos move (sent over
// NOTIFY, the default transport).
func TestQueueOnlyNodePublishesLifecycleEventsOverNotify(t *testing.T) {
	t.Parallel()
	lifecycleAcrossNodes(t, func(*config.Config) {})
}

// TestQueueOnlyNodePublishesLifecycleEventsOverTheMesh: the same with the
// mesh transport: the queue node dials the realtime node's mesh (it accepts
// no link itself: it runs no realtime).
func TestQueueOnlyNodePublishesLifecycleEventsOverTheMesh(t *testing.T) {
	t.Parallel()
	lifecycleAcrossNodes(t, func(c *config.Config) {
		c.Realtime.EphemeralTransport = realtime.TransportMesh
		c.Realtime.ClusterSecret = strings.Repeat("lifecycle-secret-", 3)
	})
}

func lifecycleAcrossNodes(t *testing.T, transport func(*config.Config)) {
	t.Helper()
	db := pgtest.NewDatabase(t)
	as := func(id string) func(*config.Config) {
		return func(c *config.Config) {
			named(id)(c)
			steadyHeartbeat(c) // a node swept from the registry under load would stop
			transport(c)
		}
	}
	rt := setupFull(t, "realtime", db, as("lc-realtime"))
	qn := setupFull(t, "queue", db, as("lc-queue"))

	const probeQueue, workQueue = "lc-probe", "lc-work"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stream, err := realtimev1.NewRealtimeServiceClient(rt.conn).Subscribe(ctx, &realtimev1.SubscribeRequest{
		Channels:         []string{realtime.QueueChannelPrefix + probeQueue, realtime.QueueChannelPrefix + workQueue},
		IncludeEphemeral: true,
	})
	require.NoError(t, err)
	events := make(chan *realtimev1.RealtimeEvent, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := stream.Recv()
			if err != nil {
				return
			}
			if ev := m.GetEvent(); ev != nil {
				select {
				case events <- ev:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })

	// The queue node publishes only once it has read the subscriber's
	// presence rows (every PresenceInterval): probe on the probe queue until
	// one is heard; then the work queue, subscribed in the same call, is
	// listened too.
	q := queuev1.NewQueueServiceClient(qn.conn)
	deadline := time.After(30 * time.Second)
	for heard := false; !heard; {
		_, err := q.Enqueue(t.Context(), &queuev1.EnqueueRequest{Queue: probeQueue, Kind: "probe"})
		require.NoError(t, err)
		select {
		case ev := <-events:
			heard = ev.GetKind() == "todo.enqueued"
		case <-time.After(50 * time.Millisecond): // paces the probes
		case <-deadline:
			t.Fatal("the realtime node heard none of the queue node's lifecycle events")
		}
	}

	next := func() *realtimev1.RealtimeEvent {
		t.Helper()
		for {
			select {
			case ev := <-events:
				if ev.GetChannel() == realtime.QueueChannelPrefix+workQueue {
					return ev
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no lifecycle event on the work queue")
			}
		}
	}
	enq, err := q.Enqueue(t.Context(), &queuev1.EnqueueRequest{Queue: workQueue, Kind: "work"})
	require.NoError(t, err)
	claimed, err := q.Claim(t.Context(), &queuev1.ClaimRequest{Queue: workQueue, WorkerId: "w1"})
	require.NoError(t, err)
	require.Len(t, claimed.GetTodos(), 1)
	todo := claimed.GetTodos()[0]
	_, err = q.Complete(t.Context(), &queuev1.CompleteRequest{Id: todo.GetId(), LeaseToken: todo.GetLeaseToken()})
	require.NoError(t, err)

	for _, kind := range []string{"todo.enqueued", "todo.claimed", "todo.completed"} {
		ev := next()
		require.Equal(t, kind, ev.GetKind())
		require.InDelta(t, float64(enq.GetTodo().GetId()), ev.GetPayload().GetFields()["todo_id"].GetNumberValue(), 0, kind)
		require.Equal(t, "node:lc-queue", ev.GetPublishedBy(), "published by the queue-only node")
	}

	// The queue's own changes go on the same channel.
	_, err = q.PauseQueue(t.Context(), &queuev1.PauseQueueRequest{Queue: workQueue})
	require.NoError(t, err)
	_, err = q.ResumeQueue(t.Context(), &queuev1.ResumeQueueRequest{Queue: workQueue})
	require.NoError(t, err)
	_, err = q.SetQueueLimits(t.Context(), &queuev1.SetQueueLimitsRequest{Queue: workQueue, KeyMaxRunning: 2})
	require.NoError(t, err)
	for _, want := range [][2]string{{"queue.paused", "paused"}, {"queue.resumed", "running"}, {"queue.limits", "limited"}} {
		kind, state := want[0], want[1]
		ev := next()
		require.Equal(t, kind, ev.GetKind())
		require.Equal(t, workQueue, ev.GetPayload().GetFields()["queue"].GetStringValue(), kind)
		require.Equal(t, state, ev.GetPayload().GetFields()["state"].GetStringValue(), kind)
	}
}
