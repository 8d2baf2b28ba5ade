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

	"github.com/switchboard/switchboard/pkg/grpcserver"
)

type testBundle struct {
	srv    *grpcserver.Server
	health healthpb.HealthClient
}

func setup(t *testing.T, delay time.Duration) *testBundle {
	t.Helper()
	srv, err := grpcserver.New(t.Context(), zap.NewNop(), grpcserver.Options{Addr: "127.0.0.1:0", ShutdownDelay: delay})
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return &testBundle{srv: srv, health: healthpb.NewHealthClient(conn)}
}

func healthStatus(t *testing.T, c healthpb.HealthClient) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	resp, err := c.Check(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	return resp.GetStatus()
}

func TestHealthStartsNotServingUntilSet(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	require.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, healthStatus(t, b.health))
	b.srv.SetServing(true)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, healthStatus(t, b.health))
	b.srv.SetServing(false)
	require.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, healthStatus(t, b.health))
}

// During the shutdown delay the server still answers, but health already
// reports NOT_SERVING, so load balancers leave before the listener closes.
func TestDrainReportsNotServingBeforeListenerCloses(t *testing.T) {
	t.Parallel()
	b := setup(t, 300*time.Millisecond)
	b.srv.SetServing(true)

	drained := make(chan struct{})
	go func() {
		_ = b.srv.Drain(context.Background())
		close(drained)
	}()
	require.Eventually(t, func() bool {
		return healthStatus(t, b.health) == healthpb.HealthCheckResponse_NOT_SERVING
	}, 5*time.Second, 10*time.Millisecond)
	select {
	case <-drained:
		t.Fatal("drain returned before the shutdown delay")
	default:
	}
	<-drained
	b.srv.SetServing(true) // readiness racing with shutdown must not undo it
	require.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, healthStatus(t, b.health))
	require.NoError(t, b.srv.Stop(t.Context()))
	_, err := b.health.Check(t.Context(), &healthpb.HealthCheckRequest{})
	require.Equal(t, codes.Unavailable, status.Code(err), "listener closed after stop")
}

// Open server streams would hold GracefulStop until the grace period ends;
// draining ends them with UNAVAILABLE so clients reconnect elsewhere.
func TestStopEndsOpenStreams(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	b.srv.SetServing(true)
	stream, err := b.health.Watch(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	first, err := stream.Recv()
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, first.GetStatus())

	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		stopped <- b.srv.Stop(ctx)
	}()
	var last error
	for last == nil {
		_, last = stream.Recv()
	}
	require.Equal(t, codes.Unavailable, status.Code(last), "stream ends with UNAVAILABLE: %v", last)
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not return although the only stream ended")
	}
}

func TestStopBeforeStartAndTwice(t *testing.T) {
	t.Parallel()
	srv, err := grpcserver.New(t.Context(), zap.NewNop(), grpcserver.Options{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	require.NoError(t, srv.Stop(t.Context()))
	require.NoError(t, srv.Stop(t.Context()))
}
