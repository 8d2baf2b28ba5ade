//go:build integration

package realtime_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/pgnotify"
	"github.com/switchboard/switchboard/services/realtime"
)

// TestEphemeralDeliveredLiveAndNeverStored: an ephemeral event reaches the
// subscribers that asked for ephemeral events, has no id, and writes no row;
// a durable-only subscriber sees only the durable event published after it.
func TestEphemeralDeliveredLiveAndNeverStored(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	both := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"typing"}, IncludeEphemeral: true})
	durableOnly := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"typing"}})
	e.subscribed(2)
	resp := e.publish(t.Context(), "typing", false, map[string]any{"who": "ada"})
	require.Zero(t, resp.GetId())
	ev := both.next(t)
	require.False(t, ev.GetDurable())
	require.Zero(t, ev.GetId())
	require.Equal(t, "ada", ev.GetPayload().GetFields()["who"].GetStringValue())
	var rows int
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT count(*) FROM realtime_events`).Scan(&rows))
	require.Zero(t, rows, "ephemeral events are never stored")

	marker := e.publish(t.Context(), "typing", true, map[string]any{"marker": true}).GetId()
	require.Equal(t, marker, durableOnly.next(t).GetId(), "the ephemeral event did not reach the durable-only subscriber")
	require.Equal(t, marker, both.next(t).GetId())
}

// TestEphemeralFromAnotherNodeArrivesOverNotify: two nodes on one database;
// an ephemeral event published on one reaches a subscriber of the other
// through pg_notify, once. a runs its private notifier, b a shared one.
func TestEphemeralFromAnotherNodeArrivesOverNotify(t *testing.T) {
	t.Parallel()
	a := newEnv(t, realtime.Options{})
	b := newEnvOn(t, a.pool, realtime.Options{Notifier: pgnotify.New(zap.NewNop(), a.pool, pgnotify.Options{})})
	require.Len(t, b.srv.Components(), len(a.srv.Components())-1, "b's notifier is not among its components")
	b.human = a.human
	s := b.subscribe(a.human, &realtimev1.SubscribeRequest{Channels: []string{"cursor"}, IncludeEphemeral: true})
	b.subscribed(1)
	a.listening(2) // a's notifier and b's
	a.publish(t.Context(), "cursor", false, map[string]any{"x": 1.0})
	ev := s.next(t)
	require.InDelta(t, 1.0, ev.GetPayload().GetFields()["x"].GetNumberValue(), 0)
	durable := a.publish(t.Context(), "cursor", true, map[string]any{"after": true}).GetId()
	require.Equal(t, durable, s.next(t).GetId(), "the ephemeral event came once, then the durable one")
}

// TestTenantsNeverSeeEachOther: the same channel name in two tenants is two
// channels.
func TestTenantsNeverSeeEachOther(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	other := e.seedHuman()
	theirs := e.subscribe(other, &realtimev1.SubscribeRequest{Channels: []string{"shared"}, IncludeEphemeral: true})
	e.subscribed(1)
	e.publish(t.Context(), "shared", true, map[string]any{"secret": true})
	e.publish(t.Context(), "shared", false, map[string]any{"secret": true})
	p, err := structpb.NewStruct(map[string]any{"mine": true})
	require.NoError(t, err)
	own, err := e.client.Publish(as(t.Context(), other), &realtimev1.PublishRequest{Channel: "shared", Payload: p, Durable: true})
	require.NoError(t, err)
	ev := theirs.next(t)
	require.Equal(t, own.GetId(), ev.GetId(), "the first event the other tenant sees is its own")
	require.True(t, ev.GetPayload().GetFields()["mine"].GetBoolValue())

	late := e.subscribe(other, &realtimev1.SubscribeRequest{Channels: []string{"shared"}, AfterId: 1})
	require.Equal(t, own.GetId(), late.next(t).GetId(), "replay is tenant-scoped too")
}

// TestPublishAndSubscribeRefuseBadInput: clear INVALID_ARGUMENTs, each
// naming its limit, and nothing stored.
func TestPublishAndSubscribeRefuseBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	ctx := as(t.Context(), e.human)
	pad := func(n int) *structpb.Struct {
		s, err := structpb.NewStruct(map[string]any{"pad": strings.Repeat("x", n)})
		require.NoError(t, err)
		return s
	}
	for name, c := range map[string]struct {
		req  *realtimev1.PublishRequest
		want string
	}{
		"ephemeral over 7 KiB": {&realtimev1.PublishRequest{Channel: "c", Payload: pad(7300)}, "at most 7168 bytes"},
		"durable over 64 KiB":  {&realtimev1.PublishRequest{Channel: "c", Payload: pad(66000), Durable: true}, "at most 65536 bytes"},
		"bad channel":          {&realtimev1.PublishRequest{Channel: "-nope", Durable: true}, "channel"},
		"empty channel":        {&realtimev1.PublishRequest{Durable: true}, "channel"},
		"reserved channel":     {&realtimev1.PublishRequest{Channel: "sys:queue:x", Durable: true}, "reserved"},
		"long kind":            {&realtimev1.PublishRequest{Channel: "c", Kind: strings.Repeat("k", 256), Durable: true}, "kind"},
	} {
		_, err := e.client.Publish(ctx, c.req)
		require.Equal(t, codes.InvalidArgument, status.Code(err), name)
		require.Contains(t, err.Error(), c.want, name)
	}
	var rows int
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT count(*) FROM realtime_events`).Scan(&rows))
	require.Zero(t, rows)

	for name, req := range map[string]*realtimev1.SubscribeRequest{
		"no channels":  {},
		"duplicate":    {Channels: []string{"a", "a"}},
		"bad name":     {Channels: []string{"a b"}},
		"negative id":  {Channels: []string{"a"}, AfterId: -1},
		"101 channels": {Channels: manyChannels(101)},
	} {
		st, err := e.client.Subscribe(ctx, req)
		if err == nil {
			_, err = st.Recv()
		}
		require.Equal(t, codes.InvalidArgument, status.Code(err), name)
	}
}

func manyChannels(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "c" + strings.Repeat("x", i)
	}
	return out
}

// TestKeepaliveOnAnIdleStream: an idle stream gets Keepalive messages.
func TestKeepaliveOnAnIdleStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{Keepalive: 20 * time.Millisecond})
	s := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"quiet"}})
	select {
	case m := <-s.events:
		require.NotNil(t, m.GetKeepalive(), "the first message on an idle stream is a keepalive")
		require.NotNil(t, m.GetKeepalive().GetSentAt())
	case err := <-s.err:
		t.Fatalf("stream ended: %v", err)
	case <-time.After(waitFor):
		t.Fatal("no keepalive")
	}
}
