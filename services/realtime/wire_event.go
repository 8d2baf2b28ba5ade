package realtime

import (
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/switchboard/switchboard/pkg/structjson"
	"github.com/switchboard/switchboard/services/realtime/internal/store"
)

// Field numbers of SubscribeResponse{event: RealtimeEvent} (realtime.proto,
// realtime_service.proto; google/protobuf/timestamp.proto), which
// encodeDurable writes by hand. TestEncodeDurableMatchesProto holds them to
// what proto.Marshal writes.
const (
	respEvent       = 1 // SubscribeResponse.event
	evDurable       = 1
	evID            = 2
	evChannel       = 3
	evKind          = 4
	evPayload       = 5
	evPublishedBy   = 6
	evCreatedAt     = 7
	timestampSecs   = 1
	timestampNanos  = 2
	encodedOverhead = 64 // tags, lengths, id and timestamp, generously
)

// encodeDurable serializes a stored row as SubscribeResponse{event}: the
// payload goes from the row's JSON straight to protobuf
// (structjson.AppendStructProto) and the rest is a handful of fields, so a
// row costs no Struct, no map and no reflection. Every node renders every
// row once, whatever its fan-out.
func encodeDurable(e store.Event) ([]byte, error) {
	payload, err := structjson.AppendStructProto(make([]byte, 0, len(e.Payload)+len(e.Payload)/2), e.Payload)
	if err != nil {
		return nil, err
	}
	ts := protowire.AppendVarint(protowire.AppendTag(nil, timestampSecs, protowire.VarintType), uint64(e.CreatedAt.Unix()))
	if n := e.CreatedAt.Nanosecond(); n != 0 {
		ts = protowire.AppendVarint(protowire.AppendTag(ts, timestampNanos, protowire.VarintType), uint64(n))
	}
	ev := make([]byte, 0, len(payload)+len(e.Channel)+len(e.Kind)+len(e.PublishedBy)+encodedOverhead)
	ev = protowire.AppendVarint(protowire.AppendTag(ev, evDurable, protowire.VarintType), 1)
	ev = protowire.AppendVarint(protowire.AppendTag(ev, evID, protowire.VarintType), uint64(e.ID))
	ev = appendString(ev, evChannel, e.Channel)
	ev = appendString(ev, evKind, e.Kind)
	ev = protowire.AppendBytes(protowire.AppendTag(ev, evPayload, protowire.BytesType), payload)
	ev = appendString(ev, evPublishedBy, e.PublishedBy)
	ev = protowire.AppendBytes(protowire.AppendTag(ev, evCreatedAt, protowire.BytesType), ts)
	msg := make([]byte, 0, len(ev)+protowire.SizeTag(respEvent)+protowire.SizeVarint(uint64(len(ev))))
	return protowire.AppendBytes(protowire.AppendTag(msg, respEvent, protowire.BytesType), ev), nil
}

// appendString writes a proto3 string field, omitted when empty.
func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
}
