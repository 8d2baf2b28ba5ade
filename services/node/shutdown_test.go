//go:build integration

package node_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/config"
)

// TestShutdownDelayKeepsEverythingWorking: after SIGTERM the node reports
// NOT_SERVING at once but, for the shutdown delay, keeps serving with its
// background loops running — a durable event published then still reaches
// a live subscriber, which takes the realtime reader and the notifier — and
// only then ends the stream with UNAVAILABLE and exits cleanly.
//
// The delay is the window the checks must fit in (seeing NOT_SERVING, a
// publish and its delivery): 10 s, far more than they take even on a loaded
// machine, which the test then waits out for the stream to end.
func TestShutdownDelayKeepsEverythingWorking(t *testing.T) {
	t.Parallel()
	b := setupWith(t, "all", func(c *config.Config) { c.Shutdown.Delay = 10 * time.Second })
	rt := realtimev1.NewRealtimeServiceClient(b.conn)
	var sub realtimev1.RealtimeService_SubscribeClient
	publish := func(what string) int64 {
		t.Helper()
		payload, err := structpb.NewStruct(map[string]any{"when": what})
		require.NoError(t, err)
		res, err := rt.Publish(t.Context(), &realtimev1.PublishRequest{Channel: "drain", Durable: true, Payload: payload})
		require.NoError(t, err)
		return res.GetId()
	}
	receive := func(id int64) {
		t.Helper()
		for {
			msg, err := sub.Recv()
			require.NoError(t, err, "event %d arrives before the stream ends", id)
			if ev := msg.GetEvent(); ev != nil {
				require.Equal(t, id, ev.GetId())
				return
			}
		}
	}
	// Published before the subscription and replayed to it (after_id 0
	// would mean "from now on", so a first event keeps the replayed one's
	// predecessor above 0): once it arrives, the stream is live.
	publish("first")
	before := publish("before")
	sub, err := rt.Subscribe(t.Context(), &realtimev1.SubscribeRequest{Channels: []string{"drain"}, AfterId: before - 1})
	require.NoError(t, err)
	receive(before)

	stopped := make(chan error, 1)
	go func() { stopped <- b.stop() }()
	require.Eventually(t, func() bool { return !grpcServing(t, b.conn) }, 30*time.Second, 10*time.Millisecond,
		"health goes NOT_SERVING first")

	receive(publish("during the delay"))
	_, err = sub.Recv()
	require.Equal(t, codes.Unavailable, status.Code(err), "after the delay the stream ends")
	require.NoError(t, <-stopped)
}
