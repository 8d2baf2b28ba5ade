package realtime

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/structjson"
	"github.com/switchboard/switchboard/services/realtime/internal/store"
	"github.com/switchboard/switchboard/services/realtime/internal/wire"
)

// channelName is the contract's channel pattern (protovalidate checks it too;
// the handlers must be safe without the interceptor).
var channelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9:._/-]{0,127}$`)

// SystemPrefix starts the channels the services themselves publish on
// (lifecycle events); clients may subscribe to them but not publish.
const SystemPrefix = "sys:"

// Publish sends one event. A durable one is committed before the call
// returns; an ephemeral one is handed to this node's subscribers and to the
// transport (best effort) and never stored. A request whose fields pass
// then takes a token of its tenant's rate on this node (limits.go); the
// services' own events (presence, lifecycle) never do.
func (s *Server) Publish(ctx context.Context, req *realtimev1.PublishRequest) (*realtimev1.PublishResponse, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	switch ch := req.GetChannel(); {
	case !channelName.MatchString(ch):
		return nil, invalid("channel", "must match ^[A-Za-z0-9][A-Za-z0-9:._/-]{0,127}$")
	case strings.HasPrefix(ch, SystemPrefix):
		return nil, invalid("channel", "channels starting with "+SystemPrefix+" are reserved for the services' own events")
	}
	if err := checkKind(req.GetKind()); err != nil {
		return nil, err
	}
	payload := req.GetPayload()
	if payload == nil {
		payload = &structpb.Struct{}
	}
	raw, err := structjson.AppendJSON(nil, payload)
	if err != nil {
		return nil, invalid("payload", "must be a JSON object")
	}
	if req.GetDurable() {
		if len(raw) > MaxDurablePayload {
			return nil, invalid("payload", fmt.Sprintf("is %d bytes serialized; a durable event's payload is at most %d bytes", len(raw), MaxDurablePayload))
		}
		if err := s.admit(c.human, true); err != nil {
			return nil, err
		}
		id, at, err := s.publishDurable(ctx, store.Event{HumanID: c.human, Channel: req.GetChannel(), Kind: req.GetKind(), Payload: raw, PublishedBy: c.member})
		if err != nil {
			return nil, err
		}
		return &realtimev1.PublishResponse{Id: id, CreatedAt: timestamppb.New(at)}, nil
	}
	if len(raw) > MaxEphemeralPayload {
		return nil, invalid("payload", fmt.Sprintf("is %d bytes serialized; an ephemeral event's payload is at most %d bytes (it must fit a Postgres NOTIFY, 8000 bytes with its envelope)", len(raw), MaxEphemeralPayload))
	}
	if err := s.admit(c.human, false); err != nil {
		return nil, err
	}
	e := wire.Ephemeral{Origin: s.opts.NodeID, HumanID: c.human, Channel: req.GetChannel(), Kind: req.GetKind(), Payload: raw, PublishedBy: c.member, CreatedAt: time.Now()}
	if err := s.publishEphemeral(e, payload); err != nil {
		return nil, err
	}
	return &realtimev1.PublishResponse{CreatedAt: timestamppb.New(e.CreatedAt)}, nil
}

// publishEphemeral delivers e here and sends it to the other nodes. payload
// is e's Struct when the caller has it (saves parsing it back).
func (s *Server) publishEphemeral(e wire.Ephemeral, payload *structpb.Struct) error {
	// Encoded once: the size limit is the notify transport's, and that
	// transport sends these bytes (the mesh keeps the same limit).
	encoded, err := json.Marshal(e)
	if err != nil || len(encoded) > maxNotifyPayload {
		return invalid("payload", fmt.Sprintf("with its channel, kind and envelope the event must fit %d bytes", maxNotifyPayload+1))
	}
	if s.hub.listening(channelKey{e.HumanID, e.Channel}) {
		ev, err := ephemeralEvent(e, payload)
		if err != nil {
			return fmt.Errorf("render ephemeral event: %w", err)
		}
		s.pump.add(ev)
	}
	if s.ephemeralOut != nil {
		s.sendEphemeral(encoded)
	} else {
		s.transport.Broadcast(e)
	}
	return nil
}

// deliverRemote hands an ephemeral event from another node to this node's
// subscribers; this node's own events coming back are ignored (they were
// delivered here at publish time).
func (s *Server) deliverRemote(e wire.Ephemeral) {
	if e.Origin == s.opts.NodeID {
		return
	}
	if !s.hub.listening(channelKey{e.HumanID, e.Channel}) {
		return
	}
	ev, err := ephemeralEvent(e, nil)
	if err != nil { // another node's bug; nothing a subscriber could use
		s.log.Warn("undeliverable ephemeral event; skipped", zap.String("origin", e.Origin),
			zap.String("human_id", e.HumanID.String()), zap.String("channel", e.Channel), zap.Error(err))
		return
	}
	s.pump.add(ev)
}

// invalid is INVALID_ARGUMENT for one field.
func invalid(field, description string) error {
	return apierr.Invalid(apierr.FieldViolation{Field: field, Description: description})
}
