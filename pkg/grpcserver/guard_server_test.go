package grpcserver_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
)

// rawCodec sends and receives bytes as they are: a client that puts on
// the wire what protobuf-go would refuse to encode (invalid UTF-8).
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.([]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*(v.(*[]byte)) = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

// checkRequest is a HealthCheckRequest whose service (field 1) is s, bytes
// as given.
func checkRequest(s string) []byte {
	return protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), s)
}

// refusedField asserts err is INVALID_ARGUMENT with one BadRequest field.
func refusedField(t *testing.T, err error) string {
	t.Helper()
	st := status.Convert(err)
	require.Equal(t, codes.InvalidArgument, st.Code(), "%v", err)
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) == 1 {
			return br.GetFieldViolations()[0].GetField()
		}
	}
	t.Fatalf("no BadRequest detail: %v", err)
	return ""
}

// TestGuardRefusesBadTextOnEveryPath: a NUL (which protobuf decodes) and
// invalid UTF-8 (which it refuses to decode: grpc-go alone answers
// INTERNAL) are both INVALID_ARGUMENT naming the field, on unary calls and
// on streams, and the handler never sees them (the scripted one panics on
// a NUL).
func TestGuardRefusesBadTextOnEveryPath(t *testing.T) {
	t.Parallel()
	conn := scriptedClient(t)
	health := healthpb.NewHealthClient(conn)

	t.Run("unary NUL", func(t *testing.T) {
		t.Parallel()
		_, err := call(t.Context(), conn, "svc\x00")
		require.Equal(t, "service", refusedField(t, err))
	})
	t.Run("unary invalid UTF-8", func(t *testing.T) {
		t.Parallel()
		var out []byte
		err := conn.Invoke(t.Context(), scriptedMethod, checkRequest("svc\xed\xa0\x80"), &out, grpc.ForceCodecV2(rawCodec{}))
		require.Equal(t, "service", refusedField(t, err))
		require.Contains(t, status.Convert(err).Message(), "UTF-8")
	})
	t.Run("unary broken bytes", func(t *testing.T) {
		t.Parallel()
		var out []byte
		err := conn.Invoke(t.Context(), scriptedMethod, []byte{0x0a, 0x09, 'x'}, &out, grpc.ForceCodecV2(rawCodec{}))
		require.Equal(t, "request", refusedField(t, err))
	})
	t.Run("still served when valid", func(t *testing.T) {
		t.Parallel()
		var out []byte
		require.NoError(t, conn.Invoke(t.Context(), scriptedMethod, checkRequest("ok ✓"), &out, grpc.ForceCodecV2(rawCodec{})))
	})
	t.Run("stream NUL", func(t *testing.T) {
		t.Parallel()
		st, err := health.Watch(t.Context(), &healthpb.HealthCheckRequest{Service: "a\x00"})
		require.NoError(t, err)
		_, err = st.Recv()
		require.Equal(t, "service", refusedField(t, err))
	})
	t.Run("stream invalid UTF-8", func(t *testing.T) {
		t.Parallel()
		desc := &grpc.StreamDesc{StreamName: "Watch", ServerStreams: true}
		st, err := conn.NewStream(t.Context(), desc, "/grpc.health.v1.Health/Watch", grpc.ForceCodecV2(rawCodec{}))
		require.NoError(t, err)
		require.NoError(t, st.SendMsg(checkRequest("\xff")))
		require.NoError(t, st.CloseSend())
		var out []byte
		require.Equal(t, "service", refusedField(t, st.RecvMsg(&out)))
	})
}
