//go:build e2e

package binary_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/internal/e2e/e2etest"
)

// rtNode is a running node with a realtime client for one credential.
type rtNode struct {
	*e2etest.Node
	rt    realtimev1.RealtimeServiceClient
	queue queuev1.QueueServiceClient
}

// threeRealtimeNodes starts nodes a, b, c on one database with extraEnv and
// returns them with clients for a fresh tenant's agent credential.
func threeRealtimeNodes(t *testing.T, extraEnv ...string) (nodes []*rtNode, token string) {
	t.Helper()
	db := pgtest.NewDatabase(t)
	var cns []*e2etest.Node
	for _, id := range []string{"rt-a", "rt-b", "rt-c"} {
		cns = append(cns, e2etest.StartNode(t, db, id, extraEnv...))
	}
	token = e2etest.AgentToken(t, e2etest.Dial(t, cns[0].GRPC, e2etest.AdminToken), "rt")
	for _, n := range cns {
		conn := e2etest.Dial(t, n.GRPC, token)
		nodes = append(nodes, &rtNode{Node: n, rt: realtimev1.NewRealtimeServiceClient(conn), queue: queuev1.NewQueueServiceClient(conn)})
	}
	return nodes, token
}

// rtStream reads one subscription into a channel.
type rtStream struct {
	events chan *realtimev1.RealtimeEvent
	done   chan error
	cancel context.CancelFunc
}

func (n *rtNode) subscribe(t *testing.T, req *realtimev1.SubscribeRequest) *rtStream {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	st, err := n.rt.Subscribe(ctx, req)
	require.NoError(t, err)
	s := &rtStream{events: make(chan *realtimev1.RealtimeEvent, 10000), done: make(chan error, 1), cancel: cancel}
	go func() {
		for {
			m, err := st.Recv()
			if err != nil {
				s.done <- err
				return
			}
			if ev := m.GetEvent(); ev != nil && !strings.HasPrefix(ev.GetKind(), "presence.") {
				s.events <- ev
			}
		}
	}()
	t.Cleanup(cancel)
	return s
}

func (s *rtStream) next(t *testing.T) *realtimev1.RealtimeEvent {
	t.Helper()
	select {
	case ev := <-s.events:
		return ev
	case err := <-s.done:
		t.Fatalf("stream ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30 s")
	}
	return nil
}

func (n *rtNode) publish(t *testing.T, channel string, durable bool, fields map[string]any) int64 {
	t.Helper()
	p, err := structpb.NewStruct(fields)
	require.NoError(t, err)
	resp, err := n.rt.Publish(t.Context(), &realtimev1.PublishRequest{Channel: channel, Payload: p, Durable: durable})
	require.NoError(t, err)
	return resp.GetId()
}

// waitPresent waits until channel has n subscription streams cluster-wide;
// on timeout it says what Presence last answered.
func (n *rtNode) waitPresent(t *testing.T, channel string, streams int32) {
	t.Helper()
	var last string
	ok := assert.Eventually(t, func() bool {
		resp, err := n.rt.Presence(t.Context(), &realtimev1.PresenceRequest{Channel: channel})
		if err != nil {
			last = "error: " + err.Error()
			return false
		}
		var got int32
		for _, m := range resp.GetMembers() {
			got += m.GetStreams()
		}
		last = fmt.Sprintf("%d streams: %v", got, resp.GetMembers())
		return got == streams
	}, 30*time.Second, 10*time.Millisecond)
	if !ok {
		t.Fatalf("waiting for %d streams on %s; Presence last answered %s", streams, channel, last)
	}
}

// TestRealtimeThreeNodesNotify: with the pg_notify transport, a subscriber on
// node C receives what node A publishes, durable and ephemeral; it resumes on
// B from its last id after a reconnect, and again after C is killed,
// with nothing missing; the dead node's presence goes with its registry row.
func TestRealtimeThreeNodesNotify(t *testing.T) {
	t.Parallel()
	testThreeNodes(t, "REALTIME_EPHEMERAL_TRANSPORT=notify")
}

func testThreeNodes(t *testing.T, extraEnv ...string) {
	nodes, token := threeRealtimeNodes(t, extraEnv...)
	a, b, c := nodes[0], nodes[1], nodes[2]
	s := c.subscribe(t, &realtimev1.SubscribeRequest{Channels: []string{"room"}, IncludeEphemeral: true})
	a.waitPresent(t, "room", 1)

	d1 := a.publish(t, "room", true, map[string]any{"n": 1.0})
	require.Equal(t, d1, s.next(t).GetId())
	ephemeralFlows(t, a, s)

	// Reconnect: what was published while away is replayed.
	s.cancel()
	missed := []int64{a.publish(t, "room", true, map[string]any{"n": 2.0}), b.publish(t, "room", true, map[string]any{"n": 3.0})}
	r := b.subscribe(t, &realtimev1.SubscribeRequest{Channels: []string{"room"}, AfterId: d1})
	for _, id := range missed {
		require.Equal(t, id, r.next(t).GetId())
	}
	r.cancel()
	a.waitPresent(t, "room", 0) // both earlier streams have left

	// Kill the subscriber's node mid-stream, publish while it is gone,
	// resume on another node from the last id seen.
	onC := c.subscribe(t, &realtimev1.SubscribeRequest{Channels: []string{"room"}})
	a.waitPresent(t, "room", 1)
	last := a.publish(t, "room", true, map[string]any{"n": 4.0})
	require.Equal(t, last, onC.next(t).GetId())
	require.NoError(t, c.Signal(syscall.SIGKILL))
	var during []int64
	for i := range 5 {
		during = append(during, a.publish(t, "room", true, map[string]any{"during": float64(i)}))
	}
	resumed := b.subscribe(t, &realtimev1.SubscribeRequest{Channels: []string{"room"}, AfterId: last})
	for _, id := range during {
		require.Equal(t, id, resumed.next(t).GetId())
	}
	// C's presence row goes once the registry sweeps C: only the resumed
	// stream on B is left.
	a.waitPresent(t, "room", 1)

	// The gateway streams Subscribe as newline-delimited JSON.
	ndjson(t, a.HTTP, token, last)

	lifecycle(t, a, b)
}

// lifecycle: the queue's todo changes arrive on sys:queue:<queue>, from this
// node at once and from another node once it knows someone listens (its
// view of the listened system channels is refreshed with presence, so the
// first enqueues there may go unannounced: lifecycle events are ephemeral).
func lifecycle(t *testing.T, a, b *rtNode) {
	t.Helper()
	s := a.subscribe(t, &realtimev1.SubscribeRequest{Channels: []string{"sys:queue:rtq"}, IncludeEphemeral: true})
	a.waitPresent(t, "sys:queue:rtq", 1)
	enqueue := func(n *rtNode) int64 {
		resp, err := n.queue.Enqueue(t.Context(), &queuev1.EnqueueRequest{Queue: "rtq"})
		require.NoError(t, err)
		return resp.GetTodo().GetId()
	}
	id := enqueue(a)
	ev := s.next(t)
	require.Equal(t, "todo.enqueued", ev.GetKind())
	require.InDelta(t, float64(id), ev.GetPayload().GetFields()["todo_id"].GetNumberValue(), 0)

	deadline := time.Now().Add(30 * time.Second)
	onB := map[float64]bool{}
	for {
		require.True(t, time.Now().Before(deadline), "no lifecycle event from the other node within 30 s")
		onB[float64(enqueue(b))] = true
		select {
		case ev := <-s.events:
			require.Equal(t, "todo.enqueued", ev.GetKind())
			require.True(t, onB[ev.GetPayload().GetFields()["todo_id"].GetNumberValue()], "an event for a todo enqueued on b")
			return
		case err := <-s.done:
			t.Fatalf("stream ended: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ephemeralFlows: ephemeral events published on a reach the subscriber s
// (on another node) once each and in order. Events sent before the
// transport links A to the subscriber's node are lost by design (the mesh
// dials peers as it finds them in the registry), so it first publishes until
// one arrives.
func ephemeralFlows(t *testing.T, a *rtNode, s *rtStream) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for linked := false; !linked; {
		require.True(t, time.Now().Before(deadline), "no ephemeral event arrived within 30 s")
		a.publish(t, "room", false, map[string]any{"probe": true})
		select {
		case ev := <-s.events:
			require.False(t, ev.GetDurable())
			require.True(t, ev.GetPayload().GetFields()["probe"].GetBoolValue())
			linked = true
		case err := <-s.done:
			t.Fatalf("stream ended: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	for i := range 20 {
		a.publish(t, "room", false, map[string]any{"seq": float64(i)})
	}
	for i := 0; i < 20; {
		ev := s.next(t)
		if ev.GetPayload().GetFields()["probe"].GetBoolValue() {
			continue // a late probe
		}
		require.False(t, ev.GetDurable())
		require.InDelta(t, float64(i), ev.GetPayload().GetFields()["seq"].GetNumberValue(), 0)
		i++
	}
}

// TestRealtimeThreeNodesMesh: the same with ephemeral events over the
// node-to-node mesh, authenticated with the cluster secret.
func TestRealtimeThreeNodesMesh(t *testing.T) {
	t.Parallel()
	testThreeNodes(t, "REALTIME_EPHEMERAL_TRANSPORT=mesh", "SWITCHBOARD_CLUSTER_SECRET=three-node-test-secret-0123456789abcdef")
}

// ndjson reads the REST form of Subscribe on node http and checks it
// replays the event after afterID as {"result": {"event": …}}.
func ndjson(t *testing.T, addr, token string, afterID int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/api/realtime/subscribe?channels=room&after_id=%d", addr, afterID), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
	require.NoError(t, err)
	var msg struct {
		Result struct {
			Event struct {
				ID      string         `json:"id"`
				Durable bool           `json:"durable"`
				Payload map[string]any `json:"payload"`
			} `json:"event"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(line, &msg), "%s", line)
	require.True(t, msg.Result.Event.Durable, "%s", line)
	require.Equal(t, fmt.Sprint(afterID+1), msg.Result.Event.ID, "the first durable event after after_id, int64 as a JSON string: %s", line)
}
