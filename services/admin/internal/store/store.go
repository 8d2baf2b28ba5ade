// Package store is the AdminService's data access: typed wrappers over the
// sqlc queries in queries.sql that return domain types and apierr errors, so
// handlers never see pgx, SQL text or constraint names.
//
// Tenancy is enforced by the SQL itself: every method over a tenant-owned
// table takes the caller's Tenant, and the query matches only rows the caller
// may reach. A row of another tenant is indistinguishable from a missing one.
package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/services/admin/internal/store/dbsqlc"
)

// Tenant is who a query runs for: the caller's human and whether it is an
// administrator (who may reach every human's rows).
type Tenant struct {
	HumanID       uuid.UUID
	Administrator bool
}

// Cursor is a keyset position in a list ordered by (created_at, id).
type Cursor struct {
	CreatedAt time.Time
	ID        uuid.UUID
}

// Store runs the admin queries over a pool. Every method is a single SQL
// statement, so a failed call has changed nothing.
type Store struct {
	pool *pgxpool.Pool
	q    *dbsqlc.Queries
}

// New returns a store over pool.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, q: dbsqlc.New()}
}

// PostgreSQL SQLSTATEs the store turns into domain errors.
const (
	uniqueViolation     = "23505"
	checkViolation      = "23514"
	foreignKeyViolation = "23503"
)

// constraintField maps CHECK constraints (named <table>_<what>_check by the
// migrations) to the request field a client should fix and why.
var constraintField = map[string]apierr.FieldViolation{
	"humans_email_check":               {Field: "human.email", Description: "must look like x@y, without whitespace"},
	"humans_email_length_check":        {Field: "human.email", Description: "must be at most 320 characters"},
	"agents_name_check":                {Field: "agent.name", Description: "must match ^[a-z0-9][a-z0-9._-]{0,62}$"},
	"agents_metadata_check":            {Field: "agent.metadata", Description: "must be a JSON object"},
	"credentials_expires_at_check":     {Field: "expires_at", Description: "must be in the future"},
	"settings_key_check":               {Field: "setting.key", Description: "must match ^[a-z0-9_.]+$"},
	"endpoints_queue_check":            {Field: "endpoint.queue", Description: "must match ^[a-z0-9][a-z0-9._-]{0,62}$"},
	"endpoints_verification_check":     {Field: "endpoint.verification", Description: "must be a defined scheme"},
	"endpoints_max_body_bytes_check":   {Field: "endpoint.max_body_bytes", Description: "must be between 1 and 26214400"},
	"endpoints_hmac_algorithm_check":   {Field: "endpoint.hmac_algorithm", Description: "must be sha256 or sha512"},
	"endpoints_hmac_encoding_check":    {Field: "endpoint.hmac_encoding", Description: "must be hex or base64"},
	"endpoints_signature_prefix_check": {Field: "endpoint.signature_prefix", Description: "must be at most 32 characters"},
	"endpoints_tolerance_check":        {Field: "endpoint.tolerance_seconds", Description: "must be between 1 and 86400"},
	"endpoints_rate_limit_check":       {Field: "endpoint.rate_limit_per_second", Description: "must be between 0 and 1000000"},
	"adapters_kind_check":              {Field: "adapter.kind", Description: "must be a defined kind"},
	"adapters_config_check":            {Field: "adapter.config", Description: "must be a JSON object"},
	"adapters_queue_check":             {Field: "adapter.queue", Description: "must match ^[a-z0-9][a-z0-9._-]{0,62}$"},
}

// uniqueMessage is the client-facing text for each unique constraint.
var uniqueMessage = map[string]string{
	"humans_email_lower_key":     "a human with this email already exists",
	"agents_human_id_name_key":   "the human already has an agent with this name",
	"adapters_human_id_name_key": "the human already has an adapter with this name",
}

// mapErr turns a query error into a domain error. what names the resource
// for NOT_FOUND ("agent 1234…"). Unknown errors are wrapped with op for the
// server log; apierr.ToStatus shows clients only "internal error".
func mapErr(err error, op, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound(what)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case uniqueViolation:
			if msg, ok := uniqueMessage[pe.ConstraintName]; ok {
				return apierr.AlreadyExists("%s", msg)
			}
			return apierr.AlreadyExists("%s already exists", what)
		case checkViolation:
			if v, ok := constraintField[pe.ConstraintName]; ok {
				return apierr.Invalid(v)
			}
		case foreignKeyViolation:
			// The referenced human or agent was deleted between our check and
			// the write (a concurrent delete): to the caller it is just gone.
			return notFound(what)
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// notFound is the one answer for a row that is missing or out of the
// caller's reach, so the two cannot be told apart.
func notFound(what string) error { return apierr.NotFound("%s not found", what) }

// afterArgs splits an optional cursor into the nullable query arguments.
func afterArgs(c *Cursor) (*time.Time, *uuid.UUID) {
	if c == nil {
		return nil, nil
	}
	return &c.CreatedAt, &c.ID
}
