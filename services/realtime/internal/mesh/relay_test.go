//go:build integration

package mesh_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	meshv1 "github.com/switchboard/switchboard/gen/switchboard/mesh/v1"
	"github.com/switchboard/switchboard/services/realtime/internal/mesh"
)

func request(origin, channel string) *meshv1.RelayRequest {
	return &meshv1.RelayRequest{
		OriginNodeId: origin, HumanId: human.String(), Channel: channel, Kind: "cursor",
		Payload: []byte(`{"x": 1}`), PublishedBy: "human:" + human.String(), CreatedAt: timestamppb.Now(),
	}
}

// A link without the cluster secret, or with a wrong one, is refused with
// UNAUTHENTICATED and a message that says nothing about why, and none of
// what it sent is delivered.
func TestRelayRefusesWithoutTheClusterSecret(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b := tb.startNode(t, "node-b", nodeConfig{})
	client := rawClient(t, b.addr)

	for name, md := range map[string]metadata.MD{
		"missing":        nil,
		"empty":          metadata.Pairs(mesh.SecretHeader, ""),
		"wrong":          metadata.Pairs(mesh.SecretHeader, strings.Repeat("x", len(secret))),
		"prefix":         metadata.Pairs(mesh.SecretHeader, string(secret[:len(secret)-1])),
		"longer":         metadata.Pairs(mesh.SecretHeader, string(secret)+"x"),
		"right and more": metadata.Pairs(mesh.SecretHeader, string(secret), mesh.SecretHeader, "x"),
	} {
		stream, err := client.Relay(metadata.NewOutgoingContext(t.Context(), md))
		require.NoError(t, err, name)
		_ = stream.Send(request("node-x", "sneaky")) // may already see the refusal (io.EOF)
		_, err = stream.CloseAndRecv()
		require.Equal(t, codes.Unauthenticated, status.Code(err), "%s: %v", name, err)
		require.Equal(t, "missing or invalid credentials", status.Convert(err).Message(), name)
	}
	require.Empty(t, b.inbox.on("sneaky"))
	require.Zero(t, b.mesh.Stats().Received)

	// The control: the same call with the secret is accepted.
	stream, err := client.Relay(metadata.NewOutgoingContext(t.Context(), metadata.Pairs(mesh.SecretHeader, string(secret))))
	require.NoError(t, err)
	require.NoError(t, stream.Send(request("node-x", "welcome")))
	resp, err := stream.CloseAndRecv()
	require.NoError(t, err)
	require.EqualValues(t, 1, resp.GetReceived())
	require.Len(t, b.inbox.on("welcome"), 1)
}

// Invalid messages are dropped and counted, and the link carries on;
// messages claiming to come from the receiver itself are ignored.
func TestRelayDropsInvalidMessagesAndKeepsTheLink(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b := tb.startNode(t, "node-b", nodeConfig{})
	client := rawClient(t, b.addr)
	ctx := metadata.NewOutgoingContext(t.Context(), metadata.Pairs(mesh.SecretHeader, string(secret)))
	stream, err := client.Relay(ctx)
	require.NoError(t, err)
	md, err := stream.Header()
	require.NoError(t, err)
	require.Equal(t, []string{"node-b"}, md.Get(mesh.NodeIDHeader), "the receiver names itself")

	with := func(change func(*meshv1.RelayRequest)) *meshv1.RelayRequest {
		r := request("node-x", "bad")
		change(r)
		return r
	}
	object := func(size int) []byte { // {"p":"aaa…"} of exactly size bytes
		return []byte(`{"p":"` + strings.Repeat("a", size-8) + `"}`)
	}
	invalid := []*meshv1.RelayRequest{
		with(func(r *meshv1.RelayRequest) { r.OriginNodeId = "" }),
		with(func(r *meshv1.RelayRequest) { r.HumanId = "not-a-uuid" }),
		with(func(r *meshv1.RelayRequest) { r.Channel = "" }),
		with(func(r *meshv1.RelayRequest) { r.Payload = []byte(`[1, 2]`) }),
		with(func(r *meshv1.RelayRequest) { r.Payload = []byte(`{"x": `) }),
		with(func(r *meshv1.RelayRequest) { r.Payload = nil }),
		with(func(r *meshv1.RelayRequest) { r.Payload = object(mesh.MaxPayload + 1) }),
		with(func(r *meshv1.RelayRequest) { r.CreatedAt = &timestamppb.Timestamp{Seconds: 1, Nanos: -1} }),
		with(func(r *meshv1.RelayRequest) { r.Audience = "human:" + uuid.NewString() }),
		with(func(r *meshv1.RelayRequest) { r.Audience = "agent:bob" }),
	}
	for _, r := range invalid {
		require.NoError(t, stream.Send(r))
	}
	require.NoError(t, stream.Send(request("node-b", "echo"))) // "from" the receiver itself
	require.NoError(t, stream.Send(request("node-x", "good")))
	largest := request("node-x", "good")
	largest.Payload = object(mesh.MaxPayload)
	largest.CreatedAt = nil // tolerated: receipt time stands in
	largest.Audience = "agent:" + uuid.NewString()
	require.NoError(t, stream.Send(largest))

	resp, err := stream.CloseAndRecv()
	require.NoError(t, err)
	require.EqualValues(t, 2, resp.GetReceived())
	require.Len(t, b.inbox.on("good"), 2)
	require.Empty(t, b.inbox.on("bad"))
	require.Empty(t, b.inbox.on("echo"))
	require.False(t, b.inbox.on("good")[1].CreatedAt.IsZero())
	require.Equal(t, largest.GetAudience(), b.inbox.on("good")[1].Audience, "the audience crosses the link")
	s := b.mesh.Stats()
	require.EqualValues(t, len(invalid), s.Invalid)
	require.EqualValues(t, 2, s.Received)
}
