package bench

import (
	"errors"
	"math"

	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the "proto" codec wrapped here
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// The bench's subscribers run in the same process, on the same two cores, as
// the nodes they measure, and receive ~100k events a second. Decoding each
// SubscribeResponse into a google.protobuf.Struct (a map per event) made the
// load generator the largest consumer of CPU on the machine. They read the
// raw frame instead and pick out, with protowire, only the fields the bench
// needs. (NATS's bench clients, the comparison, decode nothing.)

// rawFrame receives one message's bytes (rawCodec).
type rawFrame struct{ b []byte }

// rawCodec is protobuf, except that a *rawFrame receives the bytes as they
// are. Used as a call option on the bench's Subscribe streams only.
type rawCodec struct{ proto encoding.CodecV2 }

func newRawCodec() rawCodec { return rawCodec{proto: encoding.GetCodecV2("proto")} }

func (c rawCodec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }

func (c rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if f, ok := v.(*rawFrame); ok {
		f.b = data.Materialize()
		return nil
	}
	return c.proto.Unmarshal(data, v)
}

func (rawCodec) Name() string { return "proto" }

// wireEvent is what the bench reads of a RealtimeEvent.
type wireEvent struct {
	durable bool
	id      int64
	kind    string
	// the payload fields the bench reads (google.protobuf.Struct)
	run, sent string
	pub, seq  float64
}

var errWire = errors.New("malformed SubscribeResponse")

// Field numbers of the contract (realtime.proto, realtime_service.proto,
// google/protobuf/struct.proto).
const (
	wireRespEvent    = 1 // SubscribeResponse.event
	wireRespEvents   = 3 // SubscribeResponse.events (EventBatch)
	wireBatchEvents  = 1 // EventBatch.events
	wireEvDurable    = 1 // RealtimeEvent.durable
	wireEvID         = 2 // RealtimeEvent.id
	wireEvKind       = 4 // RealtimeEvent.kind
	wireEvPayload    = 5 // RealtimeEvent.payload
	wireStructFields = 1 // Struct.fields (map entries: key 1, value 2)
	wireValueNumber  = 2 // Value.number_value
	wireValueString  = 3 // Value.string_value
)

// parseWireEvents appends the events of a SubscribeResponse to evs: none for
// a keepalive, one for `event`, each of a batch (`events`, an EventBatch).
func parseWireEvents(b []byte, evs []wireEvent) ([]wireEvent, error) {
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch {
		case num == wireRespEvent && typ == protowire.BytesType:
			ev, err := parseRealtimeEvent(v)
			evs = append(evs, ev)
			return err
		case num == wireRespEvents && typ == protowire.BytesType:
			return fields(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				if num != wireBatchEvents || typ != protowire.BytesType {
					return nil
				}
				ev, err := parseRealtimeEvent(v)
				evs = append(evs, ev)
				return err
			})
		}
		return nil
	})
	return evs, err
}

// parseRealtimeEvent reads a RealtimeEvent.
func parseRealtimeEvent(b []byte) (wireEvent, error) {
	var ev wireEvent
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == wireEvDurable && typ == protowire.VarintType:
			ev.durable = x != 0
		case num == wireEvID && typ == protowire.VarintType:
			ev.id = int64(x)
		case num == wireEvKind && typ == protowire.BytesType:
			ev.kind = string(v)
		case num == wireEvPayload && typ == protowire.BytesType:
			return ev.parseStruct(v)
		}
		return nil
	})
	return ev, err
}

func (ev *wireEvent) parseStruct(b []byte) error {
	return fields(b, func(num protowire.Number, typ protowire.Type, entry []byte, _ uint64) error {
		if num != wireStructFields || typ != protowire.BytesType {
			return nil
		}
		var key, value []byte
		if err := fields(entry, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
			switch {
			case num == 1 && typ == protowire.BytesType:
				key = v
			case num == 2 && typ == protowire.BytesType:
				value = v
			}
			return nil
		}); err != nil {
			return err
		}
		var str []byte
		var number float64
		if err := fields(value, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
			switch {
			case num == wireValueNumber && typ == protowire.Fixed64Type:
				number = math.Float64frombits(x)
			case num == wireValueString && typ == protowire.BytesType:
				str = v
			}
			return nil
		}); err != nil {
			return err
		}
		switch string(key) { // no allocation: the compiler compares in place
		case rtKeyRun:
			ev.run = string(str)
		case rtKeySent:
			ev.sent = string(str)
		case rtKeyPub:
			ev.pub = number
		case rtKeySeq:
			ev.seq = number
		}
		return nil
	})
}

// fields calls f for each field of a message: v holds a length-delimited
// field's bytes, x a varint or fixed field's value.
func fields(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errWire
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var x32 uint32
			x32, n = protowire.ConsumeFixed32(b)
			x = uint64(x32)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return errWire
		}
		b = b[n:]
		if err := f(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}
