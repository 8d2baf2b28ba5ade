// Package admin is the AdminService: humans, agents, credentials, settings,
// webhook endpoints with their secrets, and adapters. It translates the
// contract and owns no table: every read and write goes through the package
// that owns the rows (pkg/auth for the identity tables, pkg/settings,
// services/ingest/sources for endpoints and adapters), where the domain's
// rules live.
//
// Authorization has two layers. The auth interceptor has already checked
// that the credential is valid and holds the scope each RPC needs. Here,
// caller() repeats the admin-scope check and refuses agent credentials, and
// the owners' SQL filters every statement by the caller's auth.Tenant, so
// another tenant's row looks exactly like a missing one (NOT_FOUND).
//
// Request fields are validated twice over: the protovalidate rules in the
// contract run in the gRPC interceptor before a handler; the handlers and the
// owners check what the contract leaves to the server (scopes, expiry on the
// database clock, serialized sizes, setting shapes, update masks, page
// tokens), and the schema's CHECK constraints back both.
package admin

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/services/ingest/sources"
)

// Name is the service's name in `switchboard serve` and in logs.
const Name = "admin"

// Server implements adminv1.AdminServiceServer.
type Server struct {
	adminv1.UnimplementedAdminServiceServer

	log      *zap.Logger
	identity *auth.Store
	sources  *sources.Store
	// settings runs pkg/settings' statements.
	settings *pgxpool.Pool
}

// New returns the admin service. identity must hash tokens with the key the
// auth interceptor verifies with; sources must seal with key ids every node
// that verifies webhooks holds.
func New(log *zap.Logger, pool *pgxpool.Pool, identity *auth.Store, src *sources.Store) *Server {
	return &Server{log: log, identity: identity, sources: src, settings: pool}
}

// Desc is the gRPC service descriptor Server implements.
func (s *Server) Desc() *grpc.ServiceDesc { return &adminv1.AdminService_ServiceDesc }

// caller returns the verified principal and the tenant its statements run
// for.
//
// The interceptor already requires the admin scope for every RPC here; the
// check is repeated so the service is safe even where it is mounted without
// that interceptor. A credential that acts as an agent is refused: agents
// are personas that do work, and MintCredential never grants them admin, so
// such a principal can only come from a mistake.
func caller(ctx context.Context) (auth.Principal, auth.Tenant, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return auth.Principal{}, auth.Tenant{}, fmt.Errorf("admin: no verified principal: %w", apierr.ErrUnauthenticated)
	}
	if !p.Has(auth.ScopeAdmin) {
		return auth.Principal{}, auth.Tenant{}, denied("the admin scope is required")
	}
	if p.AgentID != nil {
		return auth.Principal{}, auth.Tenant{}, denied("an agent credential cannot use the admin API")
	}
	return p, p.Tenant(), nil
}

// administrator is caller for the RPCs only administrators may call; what
// names the action in the refusal.
func administrator(ctx context.Context, what string) (auth.Tenant, error) {
	p, t, err := caller(ctx)
	if err == nil && !p.Administrator {
		err = denied("only administrators may %s", what)
	}
	return t, err
}

// denied is PERMISSION_DENIED with a client-safe message. It is used only
// where the answer reveals nothing about other tenants' rows (the caller's
// own role, or its own row): anything about another tenant is NOT_FOUND.
func denied(format string, args ...any) error {
	return apierr.PermissionDenied(format, args...)
}

// invalid is INVALID_ARGUMENT for one field.
func invalid(field, description string) error {
	return apierr.Invalid(apierr.FieldViolation{Field: field, Description: description})
}
