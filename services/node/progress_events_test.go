//go:build integration

package node_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/worker"
	"github.com/switchboard/switchboard/services/realtime"
)

// TestProgressReachesQueueAndTodoChannels: a heartbeat's progress is
// published as todo.progress on the tenant's sys:queue:<queue> and
// sys:todo:<id>, with the progress object in the payload; another tenant
// subscribed to the same sys:todo:<id> name receives nothing of it (its
// subscription names a channel of its own tenant).
func TestProgressReachesQueueAndTodoChannels(t *testing.T) {
	t.Parallel()
	b := setup(t, "all")
	q := queuev1.NewQueueServiceClient(b.conn)
	_, err := q.Enqueue(t.Context(), &queuev1.EnqueueRequest{Queue: "reports", Kind: "render"})
	require.NoError(t, err)
	claimed, err := q.Claim(t.Context(), &queuev1.ClaimRequest{Queue: "reports", WorkerId: "w1"})
	require.NoError(t, err)
	require.Len(t, claimed.GetTodos(), 1)
	todo := claimed.GetTodos()[0]
	todoChannel := realtime.TodoChannelPrefix + strconv.FormatInt(todo.GetId(), 10)

	owner := subscribe(t, b.conn, realtime.QueueChannelPrefix+"reports", todoChannel, "ready")
	stranger := subscribe(t, otherTenant(t, b), todoChannel, "ready")

	progress, err := structpb.NewStruct(map[string]any{"done": 3, "total": 7})
	require.NoError(t, err)
	_, err = q.Heartbeat(t.Context(), &queuev1.HeartbeatRequest{Id: todo.GetId(), LeaseToken: todo.GetLeaseToken(), Progress: progress})
	require.NoError(t, err)

	seen := map[string]*realtimev1.RealtimeEvent{}
	for len(seen) < 2 {
		ev := owner.next(t)
		require.Equal(t, "todo.progress", ev.GetKind(), "on %s", ev.GetChannel())
		seen[ev.GetChannel()] = ev
	}
	for _, ch := range []string{realtime.QueueChannelPrefix + "reports", todoChannel} {
		ev := seen[ch]
		require.NotNil(t, ev, ch)
		f := ev.GetPayload().GetFields()
		require.InDelta(t, float64(todo.GetId()), f["todo_id"].GetNumberValue(), 0, ch)
		require.Equal(t, "reports", f["queue"].GetStringValue(), ch)
		require.Equal(t, "running", f["state"].GetStringValue(), ch)
		require.Equal(t, map[string]any{"done": 3.0, "total": 7.0}, f["progress"].GetStructValue().AsMap(), ch)
		at, err := time.Parse(time.RFC3339Nano, f["progress_at"].GetStringValue())
		require.NoError(t, err, ch)
		got, err := q.GetTodo(t.Context(), &queuev1.GetTodoRequest{Id: todo.GetId()})
		require.NoError(t, err)
		require.True(t, at.Equal(got.GetTodo().GetProgressAt().AsTime()), "the stored progress_at")
	}

	// The stranger's stream is FIFO: the progress event, had it been
	// delivered to it, would precede a marker published after the owner
	// received it.
	stranger.mark(t)
}

// otherTenant is a connection with the admin credential of a new tenant.
func otherTenant(t *testing.T, b *testBundle) *grpc.ClientConn {
	t.Helper()
	admin := adminv1.NewAdminServiceClient(b.conn)
	h, err := admin.CreateHuman(t.Context(), &adminv1.CreateHumanRequest{Human: &adminv1.Human{Email: "other@example.com"}})
	require.NoError(t, err)
	m, err := admin.MintCredential(t.Context(), &adminv1.MintCredentialRequest{HumanId: h.GetHuman().GetId(), Scopes: []string{"admin"}})
	require.NoError(t, err)
	conn, err := grpc.NewClient(b.node.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(auth.Bearer{Token: m.GetToken(), AllowInsecure: true}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// subscription is a live Subscribe stream whose last channel, its own
// marker channel, proves when it is registered (mark).
type subscription struct {
	rt     realtimev1.RealtimeServiceClient
	marker string
	self   string // the subscriber's member name ("human:<id>"), from its marker
	events chan *realtimev1.RealtimeEvent
}

// noise reports an event of the subscription's own making: a marker, or
// the presence of its own member (announced after the hub registered it,
// so possibly after the marker came back).
func (s *subscription) noise(ev *realtimev1.RealtimeEvent) bool {
	switch ev.GetKind() {
	case "marker":
		return true
	case realtime.KindPresenceJoin, realtime.KindPresenceLeave:
		return ev.GetPayload().GetFields()["member"].GetStringValue() == s.self
	}
	return false
}

// subscribe subscribes over conn (ephemeral events included) and returns
// once the subscription is registered: its marker came back.
func subscribe(t *testing.T, conn *grpc.ClientConn, channels ...string) *subscription {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	rt := realtimev1.NewRealtimeServiceClient(conn)
	stream, err := rt.Subscribe(ctx, &realtimev1.SubscribeRequest{Channels: channels, IncludeEphemeral: true})
	require.NoError(t, err)
	s := &subscription{rt: rt, marker: channels[len(channels)-1], events: make(chan *realtimev1.RealtimeEvent, 64)}
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
				case s.events <- ev:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	// Until the hub registered the stream a marker reaches no one: publish
	// again on each tick until one comes back.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		_, err := rt.Publish(t.Context(), &realtimev1.PublishRequest{Channel: s.marker, Kind: "marker"})
		require.NoError(t, err)
		if s.awaitMarker(t, tick.C, deadline) {
			return s
		}
	}
}

// awaitMarker waits for subscribe's marker until tick (false) and learns
// the subscriber's member name from it.
func (s *subscription) awaitMarker(t *testing.T, tick <-chan time.Time, deadline <-chan time.Time) bool {
	t.Helper()
	for {
		select {
		case ev := <-s.events:
			if ev.GetKind() == realtime.KindPresenceJoin { // its own: nothing else happened yet
				continue
			}
			require.Equal(t, "marker", ev.GetKind(), "before anything else happened")
			s.self = ev.GetPublishedBy()
			return true
		case <-tick:
			return false
		case <-deadline:
			t.Fatal("the subscription never registered")
		}
	}
}

// next is the next event that is not noise.
func (s *subscription) next(t *testing.T) *realtimev1.RealtimeEvent {
	t.Helper()
	for {
		select {
		case ev := <-s.events:
			if !s.noise(ev) {
				return ev
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no event")
		}
	}
}

// mark publishes one marker and requires it to be the next event: nothing
// else reached the stream before it.
func (s *subscription) mark(t *testing.T) {
	t.Helper()
	_, err := s.rt.Publish(t.Context(), &realtimev1.PublishRequest{Channel: s.marker, Kind: "final-marker"})
	require.NoError(t, err)
	for {
		select {
		case ev := <-s.events:
			if s.noise(ev) {
				continue
			}
			require.Equal(t, "final-marker", ev.GetKind(), "%s on %s reached the stream", ev.GetKind(), ev.GetChannel())
			return
		case <-time.After(30 * time.Second):
			t.Fatal("the marker never came back")
		}
	}
}

// TestWorkerProgressIsStored: a handler's worker.Progress reaches the todo
// through the SDK's heartbeats and a real node: GetTodo shows it while the
// handler runs, and after completion the last value stays.
func TestWorkerProgressIsStored(t *testing.T) {
	t.Parallel()
	b := setup(t, "all")
	admin := adminv1.NewAdminServiceClient(b.conn)
	agent, err := admin.CreateAgent(t.Context(), &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{Name: "reporter"}})
	require.NoError(t, err)
	cred, err := admin.MintCredential(t.Context(), &adminv1.MintCredentialRequest{
		AgentId: agent.GetAgent().GetId(), Scopes: []string{"agent"}, Name: "reporter",
	})
	require.NoError(t, err)
	q := queuev1.NewQueueServiceClient(b.conn)
	enq, err := q.Enqueue(t.Context(), &queuev1.EnqueueRequest{Queue: "progress", Kind: "render"})
	require.NoError(t, err)
	id := enq.GetTodo().GetId()

	conn, err := worker.Dial([]string{b.node.GRPCAddr()}, worker.DialOptions{Token: cred.GetToken(), AllowInsecure: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	gate, reported := make(chan struct{}), make(chan error, 1)
	w := worker.New(conn, "progress", func(ctx context.Context, _ *queuev1.Todo) error {
		reported <- worker.Progress(ctx, map[string]any{"pct": 50})
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}, worker.Options{HeartbeatInterval: 20 * time.Millisecond, AckDelay: worker.NoAckDelay, Wait: time.Second})
	stop := start(t, w)
	require.NoError(t, <-reported)

	progressOf := func() map[string]any {
		got, err := q.GetTodo(t.Context(), &queuev1.GetTodoRequest{Id: id})
		require.NoError(t, err)
		return got.GetTodo().GetProgress().AsMap()
	}
	require.Eventually(t, func() bool { return progressOf()["pct"] == 50.0 }, 30*time.Second, 10*time.Millisecond)
	close(gate)
	require.Eventually(t, func() bool { return w.Stats().Completed == 1 }, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, stop())
	require.Equal(t, map[string]any{"pct": 50.0}, progressOf(), "a finished todo keeps its last progress")
}

// TestProgressOverREST: a REST heartbeat takes progress as a plain JSON
// object, GetTodo's JSON returns it, and over 1 KiB is a 400 naming the
// field.
func TestProgressOverREST(t *testing.T) {
	t.Parallel()
	b := setup(t, "all")
	q := queuev1.NewQueueServiceClient(b.conn)
	_, err := q.Enqueue(t.Context(), &queuev1.EnqueueRequest{Queue: "rest", Kind: "render"})
	require.NoError(t, err)
	claimed, err := q.Claim(t.Context(), &queuev1.ClaimRequest{Queue: "rest", WorkerId: "w1"})
	require.NoError(t, err)
	require.Len(t, claimed.GetTodos(), 1)
	td := claimed.GetTodos()[0]
	path := "/api/todos/" + strconv.FormatInt(td.GetId(), 10)
	token := strconv.FormatInt(td.GetLeaseToken(), 10)

	status, body := b.rest(t, http.MethodPost, path+":heartbeat", `{"lease_token":"`+token+`","progress":{"done":2,"total":5}}`)
	require.Equal(t, http.StatusOK, status, body)
	status, body = b.rest(t, http.MethodGet, path, "")
	require.Equal(t, http.StatusOK, status, body)
	var got struct {
		Todo struct {
			Progress   json.RawMessage `json:"progress"`
			ProgressAt string          `json:"progress_at"`
		} `json:"todo"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.JSONEq(t, `{"done":2,"total":5}`, string(got.Todo.Progress))
	require.NotEmpty(t, got.Todo.ProgressAt)

	big := `{"lease_token":"` + token + `","progress":{"s":"` + strings.Repeat("x", 1100) + `"}}`
	status, body = b.rest(t, http.MethodPost, path+":heartbeat", big)
	require.Equal(t, http.StatusBadRequest, status, body)
	require.Contains(t, body, "progress")
	require.Contains(t, body, "1 KiB")
}
