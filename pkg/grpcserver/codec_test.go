package grpcserver

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestCodecSendsPreEncodedAsIsAndProtoOtherwise(t *testing.T) {
	t.Parallel()
	c := newCodec()
	require.Equal(t, "proto", c.Name())
	msg, err := structpb.NewStruct(map[string]any{"a": 1.0, "b": "x"})
	require.NoError(t, err)

	pre, err := PreEncode(msg)
	require.NoError(t, err)
	sent, err := c.Marshal(pre)
	require.NoError(t, err)
	require.Equal(t, pre.b, sent.Materialize(), "a PreEncoded goes out as its bytes")
	var decoded structpb.Struct
	require.NoError(t, proto.Unmarshal(sent.Materialize(), &decoded))
	require.True(t, proto.Equal(msg, &decoded))

	plain, err := c.Marshal(msg)
	require.NoError(t, err)
	var back structpb.Struct
	require.NoError(t, c.Unmarshal(plain, &back))
	require.True(t, proto.Equal(msg, &back), "anything else is ordinary protobuf")
}
