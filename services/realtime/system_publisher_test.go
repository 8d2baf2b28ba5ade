//go:build integration

package realtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/pgnotify"
	"github.com/switchboard/switchboard/services/realtime"
)

// TestSystemPublisherReachesAnotherNodesListeners: a node without realtime
// publishes lifecycle events over NOTIFY to a realtime node's subscriber,
// once it has read that subscriber's presence rows.
func TestSystemPublisherReachesAnotherNodesListeners(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	const channel = realtime.QueueChannelPrefix + "emails"
	s := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{channel}, IncludeEphemeral: true})
	e.subscribed(1)

	n := pgnotify.New(zap.NewNop(), e.pool, pgnotify.Options{})
	p, err := realtime.NewSystemPublisher(zap.NewNop(), e.pool, realtime.SystemPublisherOptions{
		NodeID: "queue-only", Notifier: n, PresenceInterval: 20 * time.Millisecond,
	})
	require.NoError(t, err)
	// As a node runs them: the notifier first in, last out.
	require.NoError(t, n.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, n.Stop(context.Background())) })
	for _, c := range p.Components() {
		require.NoError(t, c.Start(t.Context()))
		t.Cleanup(func() { require.NoError(t, c.Stop(context.Background())) })
	}

	// Probe until the publisher has read the presence rows, then the event.
	deadline := time.After(waitFor)
	for heard := false; !heard; {
		p.System(e.human, nil, channel, "todo.probe", func() map[string]any { return map[string]any{"todo_id": -1} })
		select {
		case m := <-s.events:
			heard = m.GetEvent().GetKind() == "todo.probe"
		case <-time.After(20 * time.Millisecond): // paces the probes
		case <-deadline:
			t.Fatalf("no probe heard within %s", waitFor)
		}
	}
	p.System(e.human, nil, channel, "todo.completed", func() map[string]any { return map[string]any{"todo_id": 7} })
	for {
		ev := s.next(t)
		if ev.GetKind() == "todo.probe" {
			continue
		}
		require.Equal(t, "todo.completed", ev.GetKind())
		require.InDelta(t, 7, ev.GetPayload().GetFields()["todo_id"].GetNumberValue(), 0)
		require.Equal(t, "node:queue-only", ev.GetPublishedBy())
		return
	}
}

// TestSystemPublisherCostsNothingUnwatched: a channel nobody listens to
// allocates nothing and never builds its fields. Not parallel: AllocsPerRun
// refuses to run in a parallel test.
func TestSystemPublisherCostsNothingUnwatched(t *testing.T) { //nolint:paralleltest // AllocsPerRun
	e := newEnv(t, realtime.Options{})
	n := pgnotify.New(zap.NewNop(), e.pool, pgnotify.Options{})
	p, err := realtime.NewSystemPublisher(zap.NewNop(), e.pool, realtime.SystemPublisherOptions{NodeID: "queue-only", Notifier: n})
	require.NoError(t, err)
	unwatched := func() map[string]any {
		t.Error("fields built for a channel nobody listens to")
		return nil
	}
	require.Zero(t, testing.AllocsPerRun(100, func() {
		p.System(e.human, nil, realtime.QueueChannelPrefix+"other", "todo.enqueued", unwatched)
	}))
}
