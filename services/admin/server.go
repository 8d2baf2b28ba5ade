// Package admin manages tenants and their configuration: humans, agents,
// endpoints, adapters, settings and minted credentials.
//
// Until its issue lands, every RPC answers UNIMPLEMENTED (the generated
// Unimplemented server), never a fake success.
package admin

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
)

// Name is the service's name in `switchboard serve` and in logs.
const Name = "admin"

// Server implements adminv1.AdminServiceServer.
type Server struct {
	adminv1.UnimplementedAdminServiceServer

	log  *zap.Logger
	pool *pgxpool.Pool
}

// New returns the admin service over pool.
func New(log *zap.Logger, pool *pgxpool.Pool) *Server {
	return &Server{log: log, pool: pool}
}

// Desc is the gRPC service descriptor Server implements.
func (s *Server) Desc() *grpc.ServiceDesc { return &adminv1.AdminService_ServiceDesc }
