package realtime

import (
	"encoding/json"
	"errors"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/services/realtime/internal/store"
	"github.com/switchboard/switchboard/services/realtime/internal/wire"
)

// structFromJSON turns a stored JSON object into a Struct (encoding/json and
// structpb.NewStruct give protojson's values in well under its time).
func structFromJSON(raw []byte) (*structpb.Struct, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not a JSON object")
	}
	return structpb.NewStruct(m)
}

// durableEvent renders a stored row once for all its subscribers.
func durableEvent(e store.Event) (durable, error) {
	p, err := structFromJSON(e.Payload)
	if err != nil {
		return durable{}, err
	}
	return durable{key: channelKey{e.HumanID, e.Channel}, ev: &realtimev1.RealtimeEvent{
		Durable: true, Id: e.ID, Channel: e.Channel, Kind: e.Kind, Payload: p,
		PublishedBy: e.PublishedBy, CreatedAt: timestamppb.New(e.CreatedAt),
	}}, nil
}

// ephemeralEvent renders an ephemeral event; payload is its Struct when the
// caller already has it (a local publish), else parsed from e.Payload.
func ephemeralEvent(e wire.Ephemeral, payload *structpb.Struct) (*realtimev1.RealtimeEvent, error) {
	if payload == nil {
		var err error
		if payload, err = structFromJSON(e.Payload); err != nil {
			return nil, err
		}
	}
	return &realtimev1.RealtimeEvent{
		Channel: e.Channel, Kind: e.Kind, Payload: payload, PublishedBy: e.PublishedBy, CreatedAt: timestamppb.New(e.CreatedAt),
	}, nil
}
