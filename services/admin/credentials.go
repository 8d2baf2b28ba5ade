package admin

import (
	"context"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/keyset"
	"github.com/switchboard/switchboard/pkg/settings"
)

// MintCredential creates a bearer token for a human (the caller's own when
// human_id is empty; only an administrator may name another) or for one of
// that human's agents. Which scopes it may hold is pkg/auth's rule, and so
// is its latest expiry: within auth.credentials' max_ttl_seconds for a
// tenant admin, and never after the caller's own credential expires. The
// plaintext token is returned once; only its keyed hash is stored.
func (s *Server) MintCredential(ctx context.Context, req *adminv1.MintCredentialRequest) (*adminv1.MintCredentialResponse, error) {
	t, humanID, err := creator(ctx, "human_id", req.GetHumanId())
	if err != nil {
		return nil, err
	}
	agentID, err := parseOptionalID("agent_id", req.GetAgentId())
	if err != nil {
		return nil, err
	}
	if err := label("name", req.GetName()); err != nil {
		return nil, err
	}
	var expires *time.Time
	if ts := req.GetExpiresAt(); ts != nil {
		if err := ts.CheckValid(); err != nil {
			return nil, invalid("expires_at", "is not a valid timestamp")
		}
		// Whether it is in the future is decided by the database clock, in
		// the INSERT (credentials_expires_at_check), never by this node's.
		expires = ptr(ts.AsTime())
	}
	nc := auth.NewCredential{
		HumanID: humanID, AgentID: agentID, Name: req.GetName(), Scopes: req.GetScopes(), ExpiresAt: expires,
	}
	if nc.MaxLifetime, err = s.maxLifetime(ctx, t); err != nil {
		return nil, err
	}
	if p, ok := auth.FromContext(ctx); ok {
		nc.Minter = &p.CredentialID
	}
	limits, err := s.tenantLimits(ctx)
	if err != nil {
		return nil, err
	}
	c, token, err := s.identity.MintCredential(ctx, t, nc, int(limits.MaxCredentials))
	return apierr.Reply(&adminv1.MintCredentialResponse{Credential: credentialProto(c), Token: token}, err)
}

// maxLifetime is the longest a credential t mints may live: the setting
// auth.credentials for a tenant admin (0: no maximum). Administrators are
// exempt: they set that setting, and the long-lived credentials a
// deployment needs (its services' own) are theirs to mint. Neither escapes
// the minter's own expiry (auth.NewCredential.Minter).
func (s *Server) maxLifetime(ctx context.Context, t auth.Tenant) (time.Duration, error) {
	if t.Administrator {
		return 0, nil
	}
	c, err := settings.Read(ctx, s.settings, settings.AuthCredentials, settings.DefaultCredentials)
	if err != nil {
		return 0, err
	}
	return c.MaxTTL(), nil
}

// ListCredentials lists credentials newest first, never their tokens. An
// empty human_id means the caller's own human, or every human for an
// administrator; filters on another tenant's human or agent match nothing.
func (s *Server) ListCredentials(ctx context.Context, req *adminv1.ListCredentialsRequest) (*adminv1.ListCredentialsResponse, error) {
	t, humanID, err := ownerFilter(ctx, req.GetHumanId())
	if err != nil {
		return nil, err
	}
	f := auth.CredentialFilter{HumanID: humanID, IncludeInactive: req.GetIncludeInactive()}
	if f.AgentID, err = parseOptionalID("agent_id", req.GetAgentId()); err != nil {
		return nil, err
	}
	scope := "credentials|" + idString(f.HumanID) + "|" + idString(f.AgentID) + "|" + strconv.FormatBool(f.IncludeInactive)
	creds, next, err := page(ctx, req, scope, func(ctx context.Context, before *keyset.Cursor, limit int32) ([]auth.Credential, error) {
		return s.identity.ListCredentials(ctx, t, f, before, limit)
	}, infallible(credentialProto))
	return apierr.Reply(&adminv1.ListCredentialsResponse{Credentials: creds, NextPageToken: next}, err)
}

// RevokeCredential makes a credential of a human the caller may act for stop
// working, with every credential it minted, transitively, except the
// caller's own (and what the caller minted): a successor revoking the token
// that minted it is rotation, not suicide. With keep_minted only the
// credential goes, and what it minted passes to its minter. Revoking it
// again succeeds and keeps the first revoked_at.
func (s *Server) RevokeCredential(ctx context.Context, req *adminv1.RevokeCredentialRequest) (*adminv1.RevokeCredentialResponse, error) {
	var minted int
	c, err := got(ctx, req.GetId(), func(ctx context.Context, t auth.Tenant, id uuid.UUID) (auth.Credential, error) {
		var by *uuid.UUID
		if p, ok := auth.FromContext(ctx); ok {
			by = &p.CredentialID
		}
		if req.GetKeepMinted() {
			return s.identity.RevokeCredentialKeepingMinted(ctx, t, id)
		}
		c, n, err := s.identity.RevokeCredential(ctx, t, id, by)
		minted = n
		return c, err
	}, infallible(credentialProto))
	return apierr.Reply(&adminv1.RevokeCredentialResponse{Credential: c, MintedRevoked: int32(min(minted, math.MaxInt32))}, err)
}

func credentialProto(c auth.Credential) *adminv1.Credential {
	return &adminv1.Credential{
		Id:          c.ID.String(),
		HumanId:     c.HumanID.String(),
		AgentId:     idString(c.AgentID),
		Name:        c.Name,
		TokenPrefix: c.TokenPrefix,
		Scopes:      slices.Sorted(slices.Values(c.Scopes)),
		CreatedAt:   timestamp(&c.CreatedAt),
		ExpiresAt:   timestamp(c.ExpiresAt),
		LastUsedAt:  timestamp(c.LastUsedAt),
		RevokedAt:   timestamp(c.RevokedAt),
		MintedBy:    idString(c.MintedBy),
	}
}
