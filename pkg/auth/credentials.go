package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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
	// MintedBy is the credential whose call minted this one; nil when none
	// did through the API (bootstrap, the command line) or when it was minted
	// before lineage was recorded (migration 00030).
	MintedBy *uuid.UUID
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
	// bootstrap). The new credential expires no later than it does, is
	// recorded as minted by it, and is revoked with it (RevokeCredential);
	// a minter that is no longer live in the database mints nothing.
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
// c.MaxLifetime or the minter's expiry (see mintExpiry); UNAUTHENTICATED
// when c.Minter is revoked or expired by now (the token cache may still have
// let its call through); RESOURCE_EXHAUSTED when the human already holds
// maxLive live credentials (tenant.limits' max_credentials).
func (s *Store) MintCredential(ctx context.Context, t Tenant, c NewCredential, maxLive int) (Credential, string, error) {
	scopes, err := mintScopes(c.Scopes, c.AgentID != nil)
	if err != nil {
		return Credential{}, "", err
	}
	token, display, err := NewToken()
	if err != nil {
		return Credential{}, "", fmt.Errorf("mint token: %w", err)
	}
	var row dbsqlc.CredentialInsertRow
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The tenant's lock first, then the minter's row: a revocation of
		// the minter's tree takes row locks only, so it never waits on
		// the tenant's lock while holding a row this mint wants.
		lock := dbsqlc.CredentialLockTenantParams{HumanID: c.HumanID, Administrator: t.Administrator, CallerID: t.HumanID}
		if err := s.q.CredentialLockTenant(ctx, tx, lock); err != nil {
			return dbErr(err, "lock tenant's credentials", "credential")
		}
		if c.Minter != nil {
			if _, err := s.q.CredentialLockMinter(ctx, tx, *c.Minter); errors.Is(err, pgx.ErrNoRows) {
				return unauthenticated()
			} else if err != nil {
				return dbErr(err, "lock minting credential", "credential")
			}
		}
		if c.ExpiresAt, err = s.mintExpiry(ctx, tx, c); err != nil {
			return err
		}
		n, err := s.q.CredentialCountLive(ctx, tx, dbsqlc.CredentialCountLiveParams(lock))
		if err != nil {
			return dbErr(err, "count live credentials", "credential")
		}
		if n >= int64(maxLive) {
			return apierr.TenantLimit(n, "live credentials", "max_credentials", int64(maxLive), "revoke one first")
		}
		row, err = s.q.CredentialInsert(ctx, tx, dbsqlc.CredentialInsertParams{
			Name: c.Name, TokenPrefix: display, TokenHash: s.hasher.Hash(token), Scopes: scopes,
			ExpiresAt: c.ExpiresAt, AgentID: c.AgentID, HumanID: c.HumanID, MintedBy: c.Minter,
			Administrator: t.Administrator, CallerID: t.HumanID,
		})
		if err != nil {
			what := "human " + c.HumanID.String()
			if c.AgentID != nil {
				what += " or its agent " + c.AgentID.String()
			}
			return dbErr(err, "insert credential", what)
		}
		return nil
	})
	if err != nil {
		return Credential{}, "", err
	}
	return Credential(row), token, nil
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

// maxRevokePasses bounds RevokeCredential's passes over a tree. Each pass
// but the last finds mints that committed while the one before waited for
// its locks, and every row a pass finds stays locked, so mints under it
// wait and then fail: two passes are the rule, a third is rare.
const maxRevokePasses = 16

// RevokeCredential revokes a credential t may reach and, transitively, every
// credential it minted, in one transaction, and returns it with how many
// others this call revoked. by is the credential making the call: when it
// lies in the tree it is spared with what it minted, so a successor minted
// by a token may revoke that token (rotation). Revoking a revoked credential
// succeeds, keeps its revoked_at, and still revokes what it minted since.
// NOT_FOUND when the credential is unknown or out of t's reach.
func (s *Store) RevokeCredential(ctx context.Context, t Tenant, id uuid.UUID, by *uuid.UUID) (Credential, int, error) {
	var (
		row     dbsqlc.CredentialGetRow
		revoked []uuid.UUID
	)
	err := postgres.RetryConflicts(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			arg := dbsqlc.CredentialRevokeTreeParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID, SparedID: by}
			var err error
			if revoked, err = untilSettled(func() ([]uuid.UUID, error) { return s.q.CredentialRevokeTree(ctx, tx, arg) }); err != nil {
				return err
			}
			row, err = s.q.CredentialGet(ctx, tx, dbsqlc.CredentialGetParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID})
			return err
		})
	})
	if err != nil {
		return Credential{}, 0, dbErr(err, "revoke credential", "credential "+id.String())
	}
	minted := len(revoked)
	if slices.Contains(revoked, id) {
		minted-- // the credential itself
	}
	return Credential(row), minted, nil
}

// RevokeCredentialKeepingMinted revokes a credential t may reach and only
// it: what it minted directly passes to its own minter (or to none), so
// those credentials stay valid and a revocation of any credential above
// still reaches them. NOT_FOUND when the credential is unknown or out of t's
// reach.
func (s *Store) RevokeCredentialKeepingMinted(ctx context.Context, t Tenant, id uuid.UUID) (Credential, error) {
	var row dbsqlc.CredentialGetRow
	err := postgres.RetryConflicts(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			get := dbsqlc.CredentialGetParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID}
			if _, err := s.q.CredentialGet(ctx, tx, get); err != nil {
				return err // out of reach: nothing locked, nothing changed
			}
			if _, err := s.q.CredentialLockWithMinted(ctx, tx, id); err != nil {
				return err
			}
			for pass := 0; ; pass++ {
				n, err := s.q.CredentialHandOnMinted(ctx, tx, id)
				if err != nil {
					return err
				}
				if n == 0 {
					break
				}
				if pass == maxRevokePasses {
					return fmt.Errorf("credential %s still minting after %d passes", id, maxRevokePasses)
				}
			}
			if err := s.q.CredentialRevokeOne(ctx, tx, id); err != nil {
				return err
			}
			var err error
			row, err = s.q.CredentialGet(ctx, tx, get)
			return err
		})
	})
	if err != nil {
		return Credential{}, dbErr(err, "revoke credential", "credential "+id.String())
	}
	return Credential(row), nil
}

// untilSettled runs a tree revocation pass until one revokes nothing (see
// CredentialRevokeTree) and returns the ids the passes revoked.
func untilSettled(pass func() ([]uuid.UUID, error)) ([]uuid.UUID, error) {
	var all []uuid.UUID
	for range maxRevokePasses {
		ids, err := pass()
		if err != nil || len(ids) == 0 {
			return all, err
		}
		all = append(all, ids...)
	}
	return all, fmt.Errorf("credential tree still growing after %d passes", maxRevokePasses)
}
