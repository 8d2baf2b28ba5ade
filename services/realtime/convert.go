package realtime

import (
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/structjson"
	"github.com/switchboard/switchboard/services/realtime/internal/store"
	"github.com/switchboard/switchboard/services/realtime/internal/wire"
)

// durableEvent renders a stored row once for all its subscribers
// (encodeDurable).
func durableEvent(e store.Event) (keyed, error) {
	msg, err := encodeDurable(e)
	if err != nil {
		return keyed{}, err
	}
	return keyed{key: channelKey{e.HumanID, e.Channel}, part: part{id: e.ID, msg: msg}}, nil
}

// ephemeralEvent renders an ephemeral event; payload is its Struct when the
// caller already has it (a local publish), else parsed from e.Payload.
func ephemeralEvent(e wire.Ephemeral, payload *structpb.Struct) (keyed, error) {
	if payload == nil {
		var err error
		if payload, err = structjson.FromJSON(e.Payload); err != nil {
			return keyed{}, err
		}
	}
	out, err := encodeEvent(&realtimev1.RealtimeEvent{
		Channel: e.Channel, Kind: e.Kind, Payload: payload, PublishedBy: e.PublishedBy, CreatedAt: timestamppb.New(e.CreatedAt),
	}, e.Audience)
	if err != nil {
		return keyed{}, err
	}
	return keyed{key: channelKey{e.HumanID, e.Channel}, part: out}, nil
}
