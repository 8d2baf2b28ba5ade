//go:build integration

package realtime_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/services/realtime"
)

// requireInvalidField checks an INVALID_ARGUMENT whose one field violation
// is field, saying says.
func requireInvalidField(t *testing.T, err error, field, says string) {
	t.Helper()
	st := status.Convert(err)
	require.Equal(t, codes.InvalidArgument, st.Code(), "%v", err)
	require.Contains(t, st.Message(), says)
	var fields []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				fields = append(fields, v.GetField())
			}
		}
	}
	require.Equal(t, []string{field}, fields)
}

// TestForgedPresenceJoinIsRefused reproduces the attack: an agent of the
// tenant publishes "presence.join" on an ordinary channel with a member of
// its choosing, so that the channel's watchers would believe someone joined.
// Every kind in a namespace the services publish in is refused, durable or
// ephemeral, whatever its case or leading space; the watcher sees only the
// server's own presence events (published_by "node:…"), and kinds that
// merely resemble a reserved one stay the client's.
func TestForgedPresenceJoinIsRefused(t *testing.T) {
	t.Parallel()
	node := "node-" + uuid.NewString()[:8]
	e := newEnv(t, realtime.Options{NodeID: node})
	watcher := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"lobby"}, IncludeEphemeral: true})
	e.subscribed(1)
	agent := uuid.New()
	_, err := e.pool.Exec(t.Context(), `INSERT INTO agents (id, human_id, name) VALUES ($1, $2, 'mallory')`, agent, e.human)
	require.NoError(t, err)
	mallory := metadata.AppendToOutgoingContext(t.Context(), "x-test-human", e.human.String(), "x-test-agent", agent.String())
	forged, err := structpb.NewStruct(map[string]any{"member": "human:" + uuid.NewString(), "node_id": "node-1"})
	require.NoError(t, err)

	for _, kind := range []string{
		realtime.KindPresenceJoin, realtime.KindPresenceLeave, "Presence.Join", " presence.join", "\u3000presence.join",
		"todo.claimed", "todo.anything", "queue.paused", "schedule.fired", "event.received",
	} {
		for _, durable := range []bool{false, true} {
			_, err := e.client.Publish(mallory, &realtimev1.PublishRequest{Channel: "lobby", Kind: kind, Payload: forged, Durable: durable})
			requireInvalidField(t, err, "kind", "reserved for the events the services publish themselves")
		}
	}
	var stored int
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT count(*) FROM realtime_events`).Scan(&stored))
	require.Zero(t, stored, "nothing forged was stored")

	for _, kind := range []string{"presence", "todos.done", "eventual", "message.presence.join", "typing"} {
		_, err := e.client.Publish(mallory, &realtimev1.PublishRequest{Channel: "lobby", Kind: kind, Payload: forged})
		require.NoError(t, err, "%q is the client's", kind)
	}
	_, err = e.client.Publish(mallory, &realtimev1.PublishRequest{Channel: "lobby", Kind: "marker"})
	require.NoError(t, err)
	for {
		ev := watcher.nextAny(t)
		if strings.HasPrefix(ev.GetKind(), "presence.") {
			require.True(t, strings.HasPrefix(ev.GetPublishedBy(), "node:"), "a presence event the server did not send: %v", ev)
			continue
		}
		require.Equal(t, "agent:"+agent.String(), ev.GetPublishedBy())
		if ev.GetKind() == "marker" {
			break
		}
	}

	// The server's own presence events still flow (they never pass Publish).
	ctx, cancel := context.WithCancel(mallory)
	defer cancel()
	_, err = e.client.Subscribe(ctx, &realtimev1.SubscribeRequest{Channels: []string{"lobby"}})
	require.NoError(t, err)
	for {
		ev := watcher.nextAny(t)
		if ev.GetKind() == realtime.KindPresenceJoin && ev.GetPayload().GetFields()["member"].GetStringValue() == "agent:"+agent.String() {
			require.Equal(t, "node:"+node, ev.GetPublishedBy())
			break
		}
	}
}

// TestSystemChannelsStayTheServices: a client cannot publish on sys:
// channels at all (the lifecycle channels), whatever the kind.
func TestSystemChannelsStayTheServices(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	for _, ch := range []string{realtime.QueueChannelPrefix + "jobs", realtime.TodoChannelPrefix + "1", realtime.IngestChannel} {
		_, err := e.client.Publish(as(t.Context(), e.human), &realtimev1.PublishRequest{Channel: ch, Kind: "message"})
		requireInvalidField(t, err, "channel", "reserved")
	}
}

// TestUnreservedLifecycleKindIsNotSent: the services can only send kinds a
// client cannot (a kind outside the reserved namespaces is dropped, so the
// two sets never meet even if a service is changed carelessly).
func TestUnreservedLifecycleKindIsNotSent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	s := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{realtime.IngestChannel}, IncludeEphemeral: true})
	e.subscribed(1)
	e.srv.System(e.human, nil, realtime.IngestChannel, "message", func() map[string]any { return map[string]any{"n": 1} })
	e.srv.System(e.human, nil, realtime.IngestChannel, "event.received", func() map[string]any { return map[string]any{"n": 2} })
	ev := s.next(t)
	require.Equal(t, "event.received", ev.GetKind(), "the unreserved kind was dropped")
}

// TestKindWithInvisibleCharactersIsRefused reproduces finding 12: a kind
// carrying a bidi override (or another invisible or control character)
// would read as another kind to a person; it is INVALID_ARGUMENT naming
// kind, and letters of any script stay valid.
func TestKindWithInvisibleCharactersIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	ctx := as(t.Context(), e.human)
	for _, kind := range []string{"invoice.paid\u202Efdp.exe", "ad\u200Bmin", "typ\u2066ing", "line\nbreak", "tag\U000E0041", "\u3164"} {
		for _, durable := range []bool{false, true} {
			_, err := e.client.Publish(ctx, &realtimev1.PublishRequest{Channel: "room", Kind: kind, Durable: durable})
			requireInvalidField(t, err, "kind", "only visible characters are accepted")
		}
	}
	_, err := e.client.Publish(ctx, &realtimev1.PublishRequest{Channel: "room", Kind: "Zoë tippt 東京 👩\u200d💻", Durable: true})
	require.NoError(t, err)
}
