package grpcserver

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the "proto" codec this one wraps
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// PreEncoded is a response message already serialized. A fan-out that sends
// one event to a hundred streams marshals it once and hands every stream the
// same bytes (ServerStream.SendMsg(pre)), instead of letting each stream
// marshal its own copy; the bytes are only read, never changed, so sharing
// them is safe.
type PreEncoded struct{ b []byte }

// PreEncode serializes m for SendMsg on any stream of this server.
func PreEncode(m proto.Message) (*PreEncoded, error) {
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("pre-encode %T: %w", m, err)
	}
	return &PreEncoded{b: b}, nil
}

// PreEncodedBytes wraps b, a message serialized by the caller (for example
// several pre-encoded messages joined into a repeated field), for SendMsg.
// b must not change afterwards.
func PreEncodedBytes(b []byte) *PreEncoded { return &PreEncoded{b: b} }

// Bytes is the serialized message; the caller must not change it.
func (p *PreEncoded) Bytes() []byte { return p.b }

// codec is the server's codec: protobuf, except that a *PreEncoded is sent
// as it is.
type codec struct{ proto encoding.CodecV2 }

func newCodec() codec { return codec{proto: encoding.GetCodecV2("proto")} }

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	if p, ok := v.(*PreEncoded); ok {
		return mem.BufferSlice{mem.SliceBuffer(p.b)}, nil
	}
	return c.proto.Marshal(v)
}

// Unmarshal decodes protobuf. A request that does not decode (invalid UTF-8
// in a string, nesting past protobuf's limit, broken bytes) is the caller's
// INVALID_ARGUMENT, but grpc-go would answer INTERNAL for any codec error:
// so such a message is marked with the offending field's path instead and
// decodes "successfully", and the request guard refuses it before any
// handler runs (wire.go).
func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.proto.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	m, ok := v.(proto.Message)
	if !ok {
		return err
	}
	vio := wireViolation(data.Materialize(), m.ProtoReflect().Descriptor(), level{})
	if vio == nil {
		vio = &violation{why: undecodable.why}
	}
	markFault(m, vio)
	return nil
}

// Name is "proto": to clients this is the ordinary protobuf codec.
func (codec) Name() string { return "proto" }
