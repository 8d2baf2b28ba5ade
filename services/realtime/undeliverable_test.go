//go:build integration

package realtime_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/realtime"
)

// poison stores, around the API, a durable event on channel whose payload
// is JSON nested 3,000 levels deep (Publish refuses more than 64 today; a
// row from before that cap, or written by hand, can still be there).
func (e *env) poison(channel string) int64 {
	e.t.Helper()
	const depth = 3000
	raw := strings.Repeat(`{"a":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1)
	var id int64
	require.NoError(e.t, e.pool.QueryRow(e.t.Context(),
		`INSERT INTO realtime_events (human_id, channel, kind, payload) VALUES ($1, $2, 'poison', $3::jsonb) RETURNING id`,
		e.human, channel, raw).Scan(&id))
	return id
}

// skipped asserts the service logged event id as skipped, at Warn.
func skipped(t *testing.T, logs *observer.ObservedLogs, id int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, l := range logs.FilterMessage("undeliverable realtime event; skipped").All() {
			if l.Level == zapcore.WarnLevel && l.ContextMap()["event_id"] == id {
				return true
			}
		}
		return false
	}, waitFor, 10*time.Millisecond)
}

// TestUndeliverableRowIsSkippedLiveAndOnReplay: a row no subscriber could
// decode never stops a stream. Live, the reader skips it (logged at Warn
// with its ids) and fans out the next rows; on replay, a subscriber
// resuming from before it gets the rows around it, then live events.
func TestUndeliverableRowIsSkippedLiveAndOnReplay(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.WarnLevel)
	e := newEnvLogged(t, pgtest.NewPool(t), realtime.Options{}, zap.New(core))

	live := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"room"}})
	e.subscribed(1)
	before := e.publish(t.Context(), "room", true, map[string]any{"n": 1.0}).GetId()
	bad := e.poison("room")
	after := e.publish(t.Context(), "room", true, map[string]any{"n": 2.0}).GetId()
	require.Equal(t, before, live.next(t).GetId())
	require.Equal(t, after, live.next(t).GetId(), "the row after the undeliverable one arrives")
	skipped(t, logs, bad)

	resumed := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"room"}, AfterId: before})
	require.Equal(t, after, resumed.next(t).GetId(), "replay skips it too")
	e.subscribed(2)
	next := e.publish(t.Context(), "room", true, map[string]any{"n": 3.0}).GetId()
	require.Equal(t, next, resumed.next(t).GetId(), "and goes on live")
	require.Equal(t, next, live.next(t).GetId())
	require.Len(t, logs.FilterMessage("undeliverable realtime event; skipped").All(), 2, "once by the reader, once by the replay")
}

// nested is a JSON object nested n levels: {"a":{"a":…{}}}.
func nested(n int) *structpb.Struct {
	s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for range n - 1 {
		s = &structpb.Struct{Fields: map[string]*structpb.Value{"a": structpb.NewStructValue(s)}}
	}
	return s
}

// TestPublishRefusesWhatCouldNotBeStoredOrRead: through the node's real
// interceptor chain, text PostgreSQL refuses and payloads nested past 64
// levels are INVALID_ARGUMENT naming the field, and nothing is stored.
func TestPublishRefusesWhatCouldNotBeStoredOrRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	ctx := as(t.Context(), e.human)
	withNUL, err := structpb.NewStruct(map[string]any{"a": map[string]any{"b": "x\x00y"}})
	require.NoError(t, err)
	for name, c := range map[string]struct {
		req   *realtimev1.PublishRequest
		field string
		says  string
	}{
		"NUL in kind":            {&realtimev1.PublishRequest{Channel: "room", Durable: true, Kind: "k\x00"}, "kind", "NUL"},
		"NUL in a payload value": {&realtimev1.PublishRequest{Channel: "room", Durable: true, Payload: withNUL}, "payload.a.b", "NUL"},
		"65 levels":              {&realtimev1.PublishRequest{Channel: "room", Durable: true, Payload: nested(65)}, "payload", "64 levels"},
		"3,333 levels":           {&realtimev1.PublishRequest{Channel: "room", Durable: true, Payload: nested(3333)}, "payload", "64 levels"},
		"ephemeral, 65 levels":   {&realtimev1.PublishRequest{Channel: "room", Payload: nested(65)}, "payload", "64 levels"},
	} {
		_, err := e.client.Publish(ctx, c.req)
		st := status.Convert(err)
		require.Equal(t, codes.InvalidArgument, st.Code(), "%s: %v", name, err)
		require.Contains(t, st.Message(), c.says, name)
		var fields []string
		for _, d := range st.Details() {
			if br, ok := d.(*errdetails.BadRequest); ok {
				for _, v := range br.GetFieldViolations() {
					fields = append(fields, v.GetField())
				}
			}
		}
		require.Equal(t, []string{c.field}, fields, name)
	}
	var n int
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT count(*) FROM realtime_events`).Scan(&n))
	require.Zero(t, n, "nothing stored")

	_, err = e.client.Publish(ctx, &realtimev1.PublishRequest{Channel: "room", Durable: true, Kind: "naïve ✓", Payload: nested(64)})
	require.NoError(t, err, "64 levels and non-ASCII text are fine")
}
