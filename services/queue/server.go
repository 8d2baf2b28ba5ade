// Package queue is the durable todo queue: Enqueue, Claim, Heartbeat, Complete,
// Fail, Release and their admin reads, backed by the todos table.
//
// Until its issue lands, every RPC answers UNIMPLEMENTED (the generated
// Unimplemented server), never a fake success.
package queue

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// Name is the service's name in `switchboard serve` and in logs.
const Name = "queue"

// Server implements queuev1.QueueServiceServer.
type Server struct {
	queuev1.UnimplementedQueueServiceServer

	log  *zap.Logger
	pool *pgxpool.Pool
}

// New returns the queue service over pool.
func New(log *zap.Logger, pool *pgxpool.Pool) *Server {
	return &Server{log: log, pool: pool}
}

// Desc is the gRPC service descriptor Server implements.
func (s *Server) Desc() *grpc.ServiceDesc { return &queuev1.QueueService_ServiceDesc }
