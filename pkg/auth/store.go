package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard/switchboard/pkg/auth/internal/dbsqlc"
)

// errUnknownCredential: no valid credential has this hash (unknown, revoked,
// expired, or its human or agent disabled — deliberately not told apart).
var errUnknownCredential = errors.New("unknown credential")

// Store is the owner of the identity tables (humans, agents, credentials):
// the credential lookup behind authentication, bootstrap, and the tenancy-
// filtered reads and writes the admin API exposes. No other package writes
// these tables.
type Store struct {
	pool   *pgxpool.Pool
	hasher *Hasher
	q      *dbsqlc.Queries
}

// NewStore returns a store over pool; hasher turns minted tokens into the
// stored hash and must be the one the authenticator verifies with.
func NewStore(pool *pgxpool.Pool, hasher *Hasher) *Store {
	return &Store{pool: pool, hasher: hasher, q: dbsqlc.New()}
}

// authenticate resolves a token hash to a principal and how long the
// credential stays valid (0: no expiry).
func (s *Store) authenticate(ctx context.Context, hash []byte) (Principal, time.Duration, error) {
	r, err := s.q.CredentialAuthenticate(ctx, s.pool, hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return Principal{}, 0, errUnknownCredential
	}
	if err != nil {
		return Principal{}, 0, fmt.Errorf("authenticate: %w", err)
	}
	scopes, err := ParseScopes(r.Scopes)
	if err != nil {
		return Principal{}, 0, fmt.Errorf("credential %s: %w", r.ID, err)
	}
	p := Principal{CredentialID: r.ID, HumanID: r.HumanID, AgentID: r.AgentID, Scopes: scopes}
	p.Administrator = r.IsAdmin && p.Has(ScopeAdmin)
	var validFor time.Duration
	if r.ExpiresInMs >= 0 {
		validFor = time.Duration(r.ExpiresInMs) * time.Millisecond
	}
	return p, validFor, nil
}

// ErrNotAdministrator means the email given to bootstrap an administrator belongs
// to a human that is not one. Promoting it implicitly would hand the whole
// deployment to whoever set that email on their own account (no email is
// verified), so it is refused unless the operator asks for it by name.
var ErrNotAdministrator = errors.New("belongs to a human that is not an administrator; refusing to promote it implicitly")

// Bootstrap makes sure the administrator human with email exists and that
// token (already minted, e.g. SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN) is one of its
// admin credentials. Idempotent: every node of a cluster may run it at boot.
// It never promotes an existing non-administrator (ErrNotAdministrator).
func (s *Store) Bootstrap(ctx context.Context, email, name, token string) error {
	_, err := s.bootstrap(ctx, email, name, token, false)
	return err
}

// bootstrap is Bootstrap that may promote an existing human when promote is
// set; promoted reports whether it did.
func (s *Store) bootstrap(ctx context.Context, email, name, token string, promote bool) (promoted bool, err error) {
	if err := ParseToken(token); err != nil {
		return false, err
	}
	r, err := s.q.HumanEnsureAdministrator(ctx, s.pool, dbsqlc.HumanEnsureAdministratorParams{Email: email, Promote: promote})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, fmt.Errorf("email %s %w", email, ErrNotAdministrator)
	}
	if err != nil {
		return false, fmt.Errorf("ensure administrator %s: %w", email, err)
	}
	_, err = s.q.CredentialInsert(ctx, s.pool, dbsqlc.CredentialInsertParams{
		HumanID: r.ID, Name: name, TokenPrefix: token[:DisplayPrefixLen], TokenHash: s.hasher.Hash(token),
		Scopes: []string{string(ScopeAdmin)}, Administrator: true, CallerID: r.ID,
	})
	if err != nil && !errors.Is(err, pgx.ErrNoRows) { // no row: the token was already stored
		return r.Promoted, fmt.Errorf("store bootstrap credential: %w", err)
	}
	return r.Promoted, nil
}

// Minted is a new admin credential from MintAdmin. The token is shown once.
type Minted struct {
	Token        string
	CredentialID uuid.UUID
	// Promoted: an existing human was made an administrator by this call.
	Promoted bool
}

// MintAdmin mints a new admin credential for the administrator human with
// email (created if missing) and returns the token: `switchboard token
// create`. An existing non-administrator with that email is promoted only if
// promote is set (the operator's --promote); otherwise ErrNotAdministrator.
func (s *Store) MintAdmin(ctx context.Context, email, name string, promote bool) (Minted, error) {
	token, _, err := NewToken()
	if err != nil {
		return Minted{}, err
	}
	promoted, err := s.bootstrap(ctx, email, name, token, promote)
	if err != nil {
		return Minted{}, err
	}
	p, _, err := s.authenticate(ctx, s.hasher.Hash(token))
	if err != nil {
		return Minted{}, err
	}
	return Minted{Token: token, CredentialID: p.CredentialID, Promoted: promoted}, nil
}
