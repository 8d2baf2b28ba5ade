package auth

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth/internal/dbsqlc"
	"github.com/switchboard/switchboard/pkg/keyset"
	"github.com/switchboard/switchboard/pkg/postgres"
)

// Credential is a row of credentials without its token hash, which never
// leaves the database through this package.
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

// Position is the credential's place in its lists (keyset.Row).
func (c Credential) Position() keyset.Cursor { return keyset.Cursor{CreatedAt: c.CreatedAt, ID: c.ID} }

// NewCredential is what MintCredential mints.
type NewCredential struct {
	HumanID uuid.UUID
	// AgentID, when set, must be an agent of HumanID.
	AgentID *uuid.UUID
	Name    string
	// Scopes are scope names; see MintCredential for which are allowed.
	Scopes []string
	// ExpiresAt must be later than the database's now(); nil never expires,
	// unless a bound below gives it an expiry.
	ExpiresAt *time.Time
	// MaxLifetime, when positive, bounds ExpiresAt from now, and is the
	// expiry of a credential asked without one (the deployment's
	// auth.credentials for a tenant admin's request).
	MaxLifetime time.Duration
	// Minter is the credential minting this one (nil: none, as at
	// bootstrap). The new credential expires no later than it does.
	Minter *uuid.UUID
}

// CredentialFilter narrows ListCredentials; nil fields do not filter.
type CredentialFilter struct {
	HumanID *uuid.UUID
	AgentID *uuid.UUID
	// IncludeInactive also lists revoked and expired credentials.
	IncludeInactive bool
}

// Which scopes a minted credential may hold depends on what it acts as
// ("a token can never do more than its human or agent may"):
//
//   - for the human itself (no agent): admin, publisher, read. Never agent:
//     that scope means "work as an agent" and needs an agent identity
//     (Principal.Has never grants it to a human credential).
//   - for an agent: agent, publisher, read. Never admin: an agent is a
//     persona that does work; admin would let a worker's token manage the
//     tenant (mint human credentials, delete agents) and so escape its
//     persona.
//
// Beyond that, minting needs admin for the target tenant, so a credential
// minted within that tenant never exceeds its minter.
var (
	humanScopes = []Scope{ScopeAdmin, ScopePublisher, ScopeRead}
	agentScopes = []Scope{ScopeAgent, ScopePublisher, ScopeRead}
)

// MintCredential creates a bearer token for c.HumanID, which t must be able
// to act for, or for one of that human's agents, and returns the stored
// credential and the token (shown once: only its keyed hash is stored).
// Scope names are validated against what the credential acts as
// (INVALID_ARGUMENT on scopes); NOT_FOUND when the human is unknown or out
// of t's reach, or the agent is not that human's; INVALID_ARGUMENT on
// expires_at when it is not in the future by the database clock, or beyond
// c.MaxLifetime or the minter's expiry (see mintExpiry).
func (s *Store) MintCredential(ctx context.Context, t Tenant, c NewCredential) (Credential, string, error) {
	scopes, err := mintScopes(c.Scopes, c.AgentID != nil)
	if err != nil {
		return Credential{}, "", err
	}
	if c.ExpiresAt, err = s.mintExpiry(ctx, c); err != nil {
		return Credential{}, "", err
	}
	token, display, err := NewToken()
	if err != nil {
		return Credential{}, "", fmt.Errorf("mint token: %w", err)
	}
	r, err := s.q.CredentialInsert(ctx, s.pool, dbsqlc.CredentialInsertParams{
		Name: c.Name, TokenPrefix: display, TokenHash: s.hasher.Hash(token), Scopes: scopes,
		ExpiresAt: c.ExpiresAt, AgentID: c.AgentID, HumanID: c.HumanID,
		Administrator: t.Administrator, CallerID: t.HumanID,
	})
	if err != nil {
		what := "human " + c.HumanID.String()
		if c.AgentID != nil {
			what += " or its agent " + c.AgentID.String()
		}
		return Credential{}, "", dbErr(err, "insert credential", what)
	}
	return Credential(r), token, nil
}

// mintScopes validates requested scope names (unknown → INVALID_ARGUMENT)
// against what the credential acts as, and returns them deduplicated and
// sorted, as Credential.scopes is documented.
func mintScopes(names []string, forAgent bool) ([]string, error) {
	parsed, err := ParseScopes(names)
	if err != nil {
		return nil, apierr.Invalid(apierr.FieldViolation{Field: "scopes", Description: err.Error()})
	}
	allowed, what := humanScopes, "a human"
	if forAgent {
		allowed, what = agentScopes, "an agent"
	}
	out := make([]string, 0, len(parsed))
	for _, sc := range parsed {
		if !slices.Contains(allowed, sc) {
			return nil, apierr.Invalid(apierr.FieldViolation{
				Field: "scopes", Description: fmt.Sprintf("scope %q cannot be granted to a credential for %s", sc, what),
			})
		}
		out = append(out, string(sc))
	}
	slices.Sort(out)
	return out, nil
}

// ListCredentials returns up to limit credentials t may see, newest first,
// before the cursor (nil for the first page).
func (s *Store) ListCredentials(ctx context.Context, t Tenant, f CredentialFilter, before *keyset.Cursor, limit int32) ([]Credential, error) {
	bt, bid := before.Args()
	rows, err := s.q.CredentialList(ctx, s.pool, dbsqlc.CredentialListParams{
		Administrator: t.Administrator, CallerID: t.HumanID,
		HumanID: f.HumanID, AgentID: f.AgentID, IncludeInactive: f.IncludeInactive,
		BeforeCreatedAt: bt, BeforeID: bid, MaxRows: limit,
	})
	if err != nil {
		return nil, dbErr(err, "list credentials", "credential")
	}
	return postgres.Convert(rows, func(r dbsqlc.CredentialListRow) Credential { return Credential(r) }), nil
}

// RevokeCredential revokes a credential t may reach; revoking it again
// succeeds and keeps the first revoked_at.
func (s *Store) RevokeCredential(ctx context.Context, t Tenant, id uuid.UUID) (Credential, error) {
	r, err := s.q.CredentialRevoke(ctx, s.pool, dbsqlc.CredentialRevokeParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID})
	if err != nil {
		return Credential{}, dbErr(err, "revoke credential", "credential "+id.String())
	}
	return Credential(r), nil
}
