package grpcserver_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/grpcserver"
)

// scripted answers Check according to the requested "service" name, so one
// registered service can exercise every path through the interceptor chain.
type scripted struct {
	healthpb.UnimplementedHealthServer
}

func (scripted) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if strings.ContainsRune(req.GetService(), 0) {
		panic("a request the guard refuses reached the handler")
	}
	switch req.GetService() {
	case "panic":
		panic("handler bug")
	case "sql":
		return nil, errors.New(`ERROR: relation "todos" does not exist (SQLSTATE 42P01)`)
	case "missing":
		return nil, apierr.NotFound("todo 42 not found")
	case "request-id":
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_ServingStatus(len(grpcserver.RequestID(ctx)))}, nil
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

const scriptedMethod = "/test.Scripted/Check"

func scriptedClient(t *testing.T) *grpc.ClientConn {
	t.Helper()
	srv, err := grpcserver.New(t.Context(), zap.NewNop(), grpcserver.Options{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	desc := healthpb.Health_ServiceDesc // same handlers under a test-only name
	desc.ServiceName = "test.Scripted"
	srv.Register(&desc, scripted{})
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func call(ctx context.Context, conn *grpc.ClientConn, service string, opts ...grpc.CallOption) (*healthpb.HealthCheckResponse, error) {
	resp := &healthpb.HealthCheckResponse{}
	err := conn.Invoke(ctx, scriptedMethod, &healthpb.HealthCheckRequest{Service: service}, resp, opts...)
	return resp, err
}

func TestInterceptorChain(t *testing.T) {
	t.Parallel()
	conn := scriptedClient(t)

	t.Run("panic becomes Internal and the server survives", func(t *testing.T) {
		t.Parallel()
		_, err := call(t.Context(), conn, "panic")
		require.Equal(t, codes.Internal, status.Code(err))
		require.Equal(t, "internal error", status.Convert(err).Message())
		_, err = call(t.Context(), conn, "ok")
		require.NoError(t, err)
	})
	t.Run("unknown errors never leak their text", func(t *testing.T) {
		t.Parallel()
		_, err := call(t.Context(), conn, "sql")
		require.Equal(t, codes.Internal, status.Code(err))
		require.NotContains(t, status.Convert(err).Message(), "SQLSTATE")
	})
	t.Run("domain errors map to their code", func(t *testing.T) {
		t.Parallel()
		_, err := call(t.Context(), conn, "missing")
		require.Equal(t, codes.NotFound, status.Code(err))
		require.Equal(t, "todo 42 not found", status.Convert(err).Message())
	})
	t.Run("request id is echoed when given", func(t *testing.T) {
		t.Parallel()
		var header metadata.MD
		ctx := metadata.AppendToOutgoingContext(t.Context(), grpcserver.RequestIDHeader, "trace-abc")
		_, err := call(ctx, conn, "ok", grpc.Header(&header))
		require.NoError(t, err)
		require.Equal(t, []string{"trace-abc"}, header.Get(grpcserver.RequestIDHeader))
	})
	t.Run("request id is generated when absent or unsafe", func(t *testing.T) {
		t.Parallel()
		var header metadata.MD
		ctx := metadata.AppendToOutgoingContext(t.Context(), grpcserver.RequestIDHeader, "an id with spaces")
		resp, err := call(ctx, conn, "request-id", grpc.Header(&header))
		require.NoError(t, err)
		got := header.Get(grpcserver.RequestIDHeader)
		require.Len(t, got, 1)
		require.Len(t, got[0], 24)
		require.Equal(t, 24, int(resp.GetStatus()), "the handler sees the same id in its context")
	})
}
