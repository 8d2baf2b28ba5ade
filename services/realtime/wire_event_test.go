package realtime

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/structjson"
	"github.com/switchboard/switchboard/services/realtime/internal/store"
)

// TestEncodeDurableMatchesProto: the hand-written encoding of a stored row
// decodes to the message proto.Marshal would have sent, for empty and full
// fields, whole and fractional seconds; a payload that cannot be rendered
// is an error, as before.
func TestEncodeDurableMatchesProto(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 5, 8, 30, 0, 123456789, time.UTC)
	for name, e := range map[string]store.Event{
		"full":            {ID: 1 << 40, HumanID: uuid.New(), Channel: "room:1/a", Kind: "message", Payload: []byte(`{"a": [1, "x", {"b": null}], "c": true}`), PublishedBy: "agent:x", CreatedAt: at},
		"empty strings":   {ID: 7, Channel: "c", Payload: []byte(`{}`), CreatedAt: at.Truncate(time.Second)},
		"before the 1970": {ID: 8, Channel: "c", Payload: []byte(`{"n": -1.5e-7}`), CreatedAt: time.Date(1969, 7, 20, 20, 17, 0, 5, time.UTC)},
	} {
		got, err := encodeDurable(e)
		require.NoError(t, err, name)
		p, err := structjson.FromJSON(e.Payload)
		require.NoError(t, err, name)
		want := &realtimev1.SubscribeResponse{Message: &realtimev1.SubscribeResponse_Event{Event: &realtimev1.RealtimeEvent{
			Durable: true, Id: e.ID, Channel: e.Channel, Kind: e.Kind, Payload: p, PublishedBy: e.PublishedBy, CreatedAt: timestamppb.New(e.CreatedAt),
		}}}
		var dec realtimev1.SubscribeResponse
		require.NoError(t, proto.Unmarshal(got, &dec), name)
		require.True(t, proto.Equal(want, &dec), "%s: got %v", name, &dec)
	}
	_, err := encodeDurable(store.Event{ID: 1, Channel: "c", Payload: []byte(`[1]`)})
	require.ErrorIs(t, err, structjson.ErrNotObject)
}
