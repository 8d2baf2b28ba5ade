package grpcserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/grpcserver"
)

// A stream that Options.AuthorizeStream ends (its credential was revoked)
// reaches its client with the reason, not as a cancellation; one its client
// leaves is released all the same.
func TestWatchedStreamEndsWithTheReason(t *testing.T) {
	t.Parallel()
	revoke := make(chan struct{})
	released := make(chan struct{}, 2)
	authorizeStream := func(ctx context.Context, _ string) (context.Context, func(), error) {
		ctx, end := context.WithCancelCause(ctx)
		go func() {
			select {
			case <-revoke:
				end(apierr.Unauthenticated("missing or invalid credentials"))
			case <-ctx.Done():
			}
		}()
		return ctx, func() { end(nil); released <- struct{}{} }, nil
	}
	srv, err := grpcserver.New(t.Context(), zap.NewNop(), grpcserver.Options{Addr: "127.0.0.1:0", AuthorizeStream: authorizeStream})
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	watch := func(ctx context.Context) grpc.ServerStreamingClient[healthpb.HealthCheckResponse] {
		stream, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
		require.NoError(t, err)
		_, err = stream.Recv() // the current status, at once
		require.NoError(t, err)
		return stream
	}
	waitReleased := func() {
		select {
		case <-released:
		case <-time.After(time.Minute):
			require.FailNow(t, "the stream was never released")
		}
	}

	leaving, leave := context.WithCancel(t.Context())
	left := watch(leaving)
	leave()
	_, err = left.Recv()
	require.Equal(t, codes.Canceled, status.Code(err))
	waitReleased()

	revoked := watch(t.Context())
	close(revoke)
	_, err = revoked.Recv()
	require.Equal(t, codes.Unauthenticated, status.Code(err), "%v", err)
	require.Equal(t, "missing or invalid credentials", status.Convert(err).Message())
	waitReleased()
}
