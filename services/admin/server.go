// Package admin manages tenants and their configuration: humans, agents,
// webhook endpoints and their secrets, settings and minted credentials
// (adapters still answer UNIMPLEMENTED through the embedded generated
// server: the ingest issue builds them).
//
// Authorization has two layers. The auth interceptor has already checked
// that the credential is valid and holds the scope each RPC needs. This
// package decides which rows the caller may touch: administrators reach
// every human's rows; anyone else only its own human's, and the SQL (see
// internal/store/queries.sql) filters by that tenant, so another tenant's
// row looks exactly like a missing one (NOT_FOUND).
//
// Request fields are validated twice over: the protovalidate rules in the
// contract run in the gRPC interceptor before a handler; the handlers check
// what the contract leaves to the server (scopes, expiry on the database
// clock, serialized sizes, setting shapes, update masks, page tokens), and
// the schema's CHECK constraints back both.
package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/secretbox"
	"github.com/switchboard/switchboard/services/admin/internal/store"
)

// Name is the service's name in `switchboard serve` and in logs.
const Name = "admin"

// Server implements adminv1.AdminServiceServer.
type Server struct {
	adminv1.UnimplementedAdminServiceServer

	log    *zap.Logger
	store  *store.Store
	hasher *auth.Hasher
	keys   *secretbox.Keyring
}

// New returns the admin service over pool. hasher turns minted tokens into
// the value stored in credentials.token_hash; it must be the one the auth
// interceptor verifies with. keys seals the endpoint secrets that
// verification needs back (SWITCHBOARD_SEALING_KEYS); every node that
// verifies webhooks must hold the key ids it seals with.
func New(log *zap.Logger, pool *pgxpool.Pool, hasher *auth.Hasher, keys *secretbox.Keyring) *Server {
	return &Server{log: log, store: store.New(pool), hasher: hasher, keys: keys}
}

// Desc is the gRPC service descriptor Server implements.
func (s *Server) Desc() *grpc.ServiceDesc { return &adminv1.AdminService_ServiceDesc }

// caller returns the verified principal and the tenant its queries run for.
//
// The interceptor already requires the admin scope for every RPC here; the
// check is repeated so the service is safe even where it is mounted without
// that interceptor. A credential that acts as an agent is refused: agents
// are personas that do work, and MintCredential never grants them admin
// (see credentials.go), so such a principal can only come from a mistake.
func caller(ctx context.Context) (auth.Principal, store.Tenant, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return auth.Principal{}, store.Tenant{}, fmt.Errorf("admin: no verified principal: %w", apierr.ErrUnauthenticated)
	}
	if !p.Has(auth.ScopeAdmin) {
		return auth.Principal{}, store.Tenant{}, denied("the admin scope is required")
	}
	if p.AgentID != nil {
		return auth.Principal{}, store.Tenant{}, denied("an agent credential cannot use the admin API")
	}
	return p, store.Tenant{HumanID: p.HumanID, Administrator: p.Administrator}, nil
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

// parseID parses a required uuid request field.
func parseID(field, s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, invalid(field, "must be a valid UUID")
	}
	return id, nil
}

// parseOptionalID parses a uuid request field where empty means "none".
func parseOptionalID(field, s string) (*uuid.UUID, error) {
	if s == "" {
		return nil, nil
	}
	id, err := parseID(field, s)
	if err != nil {
		return nil, err
	}
	return &id, nil
}

// idString renders an optional uuid the way the contract does: empty for none.
func idString(id *uuid.UUID) string {
	if id == nil {
		return ""
	}
	return id.String()
}

// timestamp renders an optional time; nil stays unset.
func timestamp(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}

// ptr returns a pointer to a copy of v, for optional patch fields.
func ptr[T any](v T) *T { return &v }
