// Package ingest stores inbound events durably and deduped (published events,
// verified webhooks, pull adapters) and turns them into todos.
//
// Until its issue lands, every RPC answers UNIMPLEMENTED (the generated
// Unimplemented server), never a fake success.
package ingest

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
)

// Name is the service's name in `switchboard serve` and in logs.
const Name = "ingest"

// Server implements ingestv1.IngestServiceServer.
type Server struct {
	ingestv1.UnimplementedIngestServiceServer

	log  *zap.Logger
	pool *pgxpool.Pool
}

// New returns the ingest service over pool.
func New(log *zap.Logger, pool *pgxpool.Pool) *Server {
	return &Server{log: log, pool: pool}
}

// Desc is the gRPC service descriptor Server implements.
func (s *Server) Desc() *grpc.ServiceDesc { return &ingestv1.IngestService_ServiceDesc }
