package realtime

import (
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/structjson"
	"github.com/switchboard/switchboard/services/realtime/internal/store"
	"github.com/switchboard/switchboard/services/realtime/internal/wire"
)

// durableEvent renders a stored row once for all its subscribers.
func durableEvent(e store.Event) (durable, error) {
	p, err := structjson.FromJSON(e.Payload)
	if err != nil {
		return durable{}, err
	}
	out, err := newOutbound(&realtimev1.RealtimeEvent{
		Durable: true, Id: e.ID, Channel: e.Channel, Kind: e.Kind, Payload: p,
		PublishedBy: e.PublishedBy, CreatedAt: timestamppb.New(e.CreatedAt),
	})
	if err != nil {
		return durable{}, err
	}
	return durable{key: channelKey{e.HumanID, e.Channel}, out: out}, nil
}

// ephemeralEvent renders an ephemeral event; payload is its Struct when the
// caller already has it (a local publish), else parsed from e.Payload.
func ephemeralEvent(e wire.Ephemeral, payload *structpb.Struct) (*outbound, error) {
	if payload == nil {
		var err error
		if payload, err = structjson.FromJSON(e.Payload); err != nil {
			return nil, err
		}
	}
	out, err := newOutbound(&realtimev1.RealtimeEvent{
		Channel: e.Channel, Kind: e.Kind, Payload: payload, PublishedBy: e.PublishedBy, CreatedAt: timestamppb.New(e.CreatedAt),
	})
	if err != nil {
		return nil, err
	}
	out.audience = e.Audience
	return out, nil
}
