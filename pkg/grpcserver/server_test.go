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
// The delay is far longer than the test may take and ended by cancelling
// Drain's context once the check is done, so "during the delay" holds
// however long the health call takes on a loaded machine.
func TestDrainReportsNotServingBeforeListenerCloses(t *testing.T) {
	t.Parallel()
	b := setup(t, time.Hour)
	b.srv.SetServing(true)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	drained := make(chan struct{})
	go func() {
		_ = b.srv.Drain(ctx)
		close(drained)
	}()
	require.Eventually(t, func() bool {
		return healthStatus(t, b.health) == healthpb.HealthCheckResponse_NOT_SERVING
	}, time.Minute, 10*time.Millisecond)
	select {
	case <-drained:
		t.Fatal("drain returned before the shutdown delay")
	default:
	}
	cancel() // the delay ends early when Drain's context does
	<-drained
	b.srv.SetServing(true) // readiness racing with shutdown must not undo it
	require.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, healthStatus(t, b.health))
	require.NoError(t, b.srv.Stop(t.Context()))
	_, err := b.health.Check(t.Context(), &healthpb.HealthCheckRequest{})
	require.Equal(t, codes.Unavailable, status.Code(err), "listener closed after stop")
}

// Drain on its own waits the whole delay: a lower bound on how long it took,
// which load can only lengthen.
func TestDrainWaitsTheDelay(t *testing.T) {
	t.Parallel()
	const delay = 300 * time.Millisecond
	b := setup(t, delay)
	b.srv.SetServing(true)
	began := time.Now()
	require.NoError(t, b.srv.Drain(context.Background()))
	require.GreaterOrEqual(t, time.Since(began), delay)
	require.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, healthStatus(t, b.health))
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

	// The grace is far longer than the test may take: Stop returning at all
	// (within the minute below) shows the stream's end let it return, not
	// the grace, however slow the machine.
	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
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
	case <-time.After(time.Minute):
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
