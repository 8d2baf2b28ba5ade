// Package realtime fans events out to live subscribers over gRPC server
// streams: durable events through Postgres, ephemeral ones never stored.
//
// Until its issue lands, every RPC answers UNIMPLEMENTED (the generated
// Unimplemented server), never a fake success.
package realtime

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
)

// Name is the service's name in `switchboard serve` and in logs.
const Name = "realtime"

// Server implements realtimev1.RealtimeServiceServer.
type Server struct {
	realtimev1.UnimplementedRealtimeServiceServer

	log  *zap.Logger
	pool *pgxpool.Pool
}

// New returns the realtime service over pool.
func New(log *zap.Logger, pool *pgxpool.Pool) *Server {
	return &Server{log: log, pool: pool}
}

// Desc is the gRPC service descriptor Server implements.
func (s *Server) Desc() *grpc.ServiceDesc { return &realtimev1.RealtimeService_ServiceDesc }
