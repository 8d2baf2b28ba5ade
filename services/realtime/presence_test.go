//go:build integration

package realtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/services/realtime"
)

// TestPresenceAcrossStreamsJoinsAndLeaves: Presence counts a member's
// streams; watchers see join and leave events; a member that leaves is gone.
func TestPresenceAcrossStreamsJoinsAndLeaves(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	watcher := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"lobby"}, IncludeEphemeral: true})
	e.subscribed(1)
	agent := uuid.New()
	_, err := e.pool.Exec(t.Context(), `INSERT INTO agents (id, human_id, name) VALUES ($1, $2, 'bot')`, agent, e.human)
	require.NoError(t, err)
	asAgent := func() context.Context {
		return metadata.AppendToOutgoingContext(e.t.Context(), "x-test-human", e.human.String(), "x-test-agent", agent.String())
	}
	ctx, cancel := context.WithCancel(asAgent())
	defer cancel()
	for range 2 {
		_, err := e.client.Subscribe(ctx, &realtimev1.SubscribeRequest{Channels: []string{"lobby", "elsewhere"}})
		require.NoError(t, err)
	}
	e.subscribed(3)
	bot := "agent:" + agent.String()
	joins := 0
	for joins < 2 {
		ev := watcher.nextAny(t)
		if ev.GetKind() == realtime.KindPresenceJoin && ev.GetPayload().GetFields()["member"].GetStringValue() == bot {
			joins++
		}
	}
	members := func() map[string]*realtimev1.PresenceMember {
		resp, err := e.client.Presence(as(t.Context(), e.human), &realtimev1.PresenceRequest{Channel: "lobby"})
		require.NoError(t, err)
		out := map[string]*realtimev1.PresenceMember{}
		for _, m := range resp.GetMembers() {
			out[m.GetMember()] = m
		}
		return out
	}
	m := members()
	require.Len(t, m, 2)
	require.Equal(t, int32(2), m[bot].GetStreams())
	require.Equal(t, int32(1), m["human:"+e.human.String()].GetStreams())

	cancel()
	e.subscribed(1)
	for {
		ev := watcher.nextAny(t)
		if ev.GetKind() == realtime.KindPresenceLeave && ev.GetPayload().GetFields()["member"].GetStringValue() == bot {
			break
		}
	}
	require.Eventually(t, func() bool { _, ok := members()[bot]; return !ok }, waitFor, 5*time.Millisecond)
}

// TestPresenceOfADeadNodeIsSweptWithLeaveEvents: rows of a node the
// registry no longer lists are removed and their leave events sent.
func TestPresenceOfADeadNodeIsSweptWithLeaveEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{PresenceInterval: 10 * time.Millisecond})
	watcher := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"lobby"}, IncludeEphemeral: true})
	e.subscribed(1)
	_, err := e.pool.Exec(t.Context(), `INSERT INTO realtime_presence (subscription_id, channel, node_id, human_id, member)
		VALUES ($1, 'lobby', 'dead-node', $2, 'human:ghost')`, uuid.New(), e.human)
	require.NoError(t, err)
	for {
		ev := watcher.nextAny(t)
		if ev.GetKind() == realtime.KindPresenceLeave && ev.GetPayload().GetFields()["member"].GetStringValue() == "human:ghost" {
			require.Equal(t, "dead-node", ev.GetPayload().GetFields()["node_id"].GetStringValue())
			break
		}
	}
	var n int
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT count(*) FROM realtime_presence WHERE node_id = 'dead-node'`).Scan(&n))
	require.Zero(t, n)
}

// TestPresenceRowsComeBackAfterTheTableIsEmptied: a Postgres crash empties
// UNLOGGED tables; the node re-inserts its live subscribers' rows.
func TestPresenceRowsComeBackAfterTheTableIsEmptied(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{PresenceInterval: 10 * time.Millisecond})
	e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"a", "b"}})
	e.subscribed(1)
	count := func() int {
		var n int
		require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT count(*) FROM realtime_presence`).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool { return count() == 2 }, waitFor, 5*time.Millisecond)
	_, err := e.pool.Exec(t.Context(), `TRUNCATE realtime_presence`)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return count() == 2 }, waitFor, 5*time.Millisecond)
}

// TestSystemEventsReachListenersOnly: a lifecycle event reaches a subscriber
// of its system channel.
func TestSystemEventsReachListenersOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	s := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{realtime.QueueChannelPrefix + "emails"}, IncludeEphemeral: true})
	e.subscribed(1)
	e.srv.System(e.human, nil, realtime.QueueChannelPrefix+"other", "todo.enqueued", func() map[string]any {
		t.Error("fields built for a channel nobody listens to")
		return nil
	})
	e.srv.System(e.human, nil, realtime.QueueChannelPrefix+"emails", "todo.completed", func() map[string]any { return map[string]any{"todo_id": 7} })
	ev := s.next(t)
	require.Equal(t, "todo.completed", ev.GetKind())
	require.InDelta(t, 7, ev.GetPayload().GetFields()["todo_id"].GetNumberValue(), 0)
}
