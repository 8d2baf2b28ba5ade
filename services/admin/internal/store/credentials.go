package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/services/admin/internal/store/dbsqlc"
)

// Credential is a row of credentials without its token hash, which never
// leaves the database through this store.
type Credential struct {
	ID          uuid.UUID
	HumanID     uuid.UUID
	AgentID     *uuid.UUID
	Name        string
	TokenPrefix string
	Scopes      []string
	CreatedAt   time.Time
	ExpiresAt   *time.Time
	LastUsedAt  *time.Time
	RevokedAt   *time.Time
}

// NewCredential is what MintCredential stores.
type NewCredential struct {
	HumanID uuid.UUID
	// AgentID, when set, must be an agent of HumanID.
	AgentID     *uuid.UUID
	Name        string
	TokenPrefix string
	// TokenHash is the 32-byte keyed hash of the token (auth.Hasher).
	TokenHash []byte
	Scopes    []string
	// ExpiresAt must be later than the database's now(); nil never expires.
	ExpiresAt *time.Time
}

// CredentialFilter narrows ListCredentials; nil fields do not filter.
type CredentialFilter struct {
	HumanID *uuid.UUID
	AgentID *uuid.UUID
	// IncludeInactive also lists revoked and expired credentials.
	IncludeInactive bool
}

// MintCredential inserts a credential. NOT_FOUND when the human is unknown
// or out of t's reach, or the agent is unknown or not that human's; an
// INVALID_ARGUMENT on expires_at when it is not in the future by the
// database clock.
func (s *Store) MintCredential(ctx context.Context, t Tenant, c NewCredential) (Credential, error) {
	r, err := s.q.CredentialInsert(ctx, s.pool, dbsqlc.CredentialInsertParams{
		Name: c.Name, TokenPrefix: c.TokenPrefix, TokenHash: c.TokenHash, Scopes: c.Scopes,
		ExpiresAt: c.ExpiresAt, AgentID: c.AgentID, HumanID: c.HumanID,
		Administrator: t.Administrator, CallerID: t.HumanID,
	})
	if err != nil {
		what := "human " + c.HumanID.String()
		if c.AgentID != nil {
			what += " or its agent " + c.AgentID.String()
		}
		return Credential{}, mapErr(err, "insert credential", what)
	}
	return Credential(r), nil
}

// ListCredentials returns up to limit credentials t may see, newest first,
// before the cursor (nil for the first page).
func (s *Store) ListCredentials(ctx context.Context, t Tenant, f CredentialFilter, before *Cursor, limit int32) ([]Credential, error) {
	bt, bid := afterArgs(before)
	rows, err := s.q.CredentialList(ctx, s.pool, dbsqlc.CredentialListParams{
		Administrator: t.Administrator, CallerID: t.HumanID,
		HumanID: f.HumanID, AgentID: f.AgentID, IncludeInactive: f.IncludeInactive,
		BeforeCreatedAt: bt, BeforeID: bid, MaxRows: limit,
	})
	if err != nil {
		return nil, mapErr(err, "list credentials", "credential")
	}
	out := make([]Credential, len(rows))
	for i, r := range rows {
		out[i] = Credential(r)
	}
	return out, nil
}

// RevokeCredential revokes a credential t may reach; revoking it again
// succeeds and keeps the first revoked_at.
func (s *Store) RevokeCredential(ctx context.Context, t Tenant, id uuid.UUID) (Credential, error) {
	r, err := s.q.CredentialRevoke(ctx, s.pool, dbsqlc.CredentialRevokeParams{
		ID: id, Administrator: t.Administrator, CallerID: t.HumanID,
	})
	if err != nil {
		return Credential{}, mapErr(err, "revoke credential", "credential "+id.String())
	}
	return Credential(r), nil
}
