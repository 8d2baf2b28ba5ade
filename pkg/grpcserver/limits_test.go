package grpcserver_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/switchboard/switchboard/pkg/grpcserver"
)

// The server announces its per-connection stream cap in its HTTP/2
// SETTINGS, so every client learns it before opening a stream; without it
// one connection could open streams without end.
func TestServerCapsStreamsPerConnection(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	conn, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(t.Context(), "tcp", b.srv.Addr())
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = conn.Write([]byte(http2.ClientPreface))
	require.NoError(t, err)
	fr := http2.NewFramer(conn, conn)
	require.NoError(t, fr.WriteSettings())
	for {
		f, err := fr.ReadFrame()
		require.NoError(t, err)
		sf, ok := f.(*http2.SettingsFrame)
		if !ok || sf.IsAck() {
			continue
		}
		v, ok := sf.Value(http2.SettingMaxConcurrentStreams)
		require.True(t, ok, "the server announces a stream cap")
		require.Equal(t, uint32(grpcserver.MaxConcurrentStreams), v)
		return
	}
}

// A request over the cap is refused as it arrives; one under it is served.
func TestServerRefusesMessagesOverTheCap(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	_, err := b.health.Check(t.Context(), &healthpb.HealthCheckRequest{Service: strings.Repeat("x", grpcserver.MaxRecvMsgSize)})
	require.Equal(t, codes.ResourceExhausted, status.Code(err))
	_, err = b.health.Check(t.Context(), &healthpb.HealthCheckRequest{Service: strings.Repeat("x", grpcserver.MaxRecvMsgSize-16)})
	require.Equal(t, codes.NotFound, status.Code(err), "under the cap: served (no such service)")
}
