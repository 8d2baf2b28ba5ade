package admin

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/services/admin/internal/store"
)

// Which scopes a minted credential may hold depends on what it acts as
// ("A token can never do more than its human or agent may"):
//
//   - for the human itself (agent_id empty): admin, publisher, read. Never
//     agent: that scope means "work as an agent" and needs an agent identity
//     (auth.Principal.Has never grants it to a human credential).
//   - for an agent: agent, publisher, read. Never admin: an agent is a
//     persona that does work; admin would let a worker's token manage the
//     tenant (mint human credentials, delete agents) and so escape its
//     persona. caller() refuses agent principals for the same reason.
//
// Beyond that, any caller here already holds admin for the target tenant,
// so a credential minted within that tenant never exceeds its minter.
var (
	humanScopes = []auth.Scope{auth.ScopeAdmin, auth.ScopePublisher, auth.ScopeRead}
	agentScopes = []auth.Scope{auth.ScopeAgent, auth.ScopePublisher, auth.ScopeRead}
)

// MintCredential creates a bearer token for a human (the caller's own when
// human_id is empty; only an administrator may name another) or for one of
// that human's agents. The plaintext token is returned once; only its keyed
// hash is stored.
func (s *Server) MintCredential(ctx context.Context, req *adminv1.MintCredentialRequest) (*adminv1.MintCredentialResponse, error) {
	p, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	humanID := p.HumanID
	if req.GetHumanId() != "" {
		if humanID, err = parseID("human_id", req.GetHumanId()); err != nil {
			return nil, err
		}
	}
	agentID, err := parseOptionalID("agent_id", req.GetAgentId())
	if err != nil {
		return nil, err
	}
	scopes, err := mintScopes(req.GetScopes(), agentID != nil)
	if err != nil {
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
	token, display, err := auth.NewToken()
	if err != nil {
		return nil, fmt.Errorf("mint token: %w", err)
	}
	c, err := s.store.MintCredential(ctx, t, store.NewCredential{
		HumanID:     humanID,
		AgentID:     agentID,
		Name:        req.GetName(),
		TokenPrefix: display,
		TokenHash:   s.hasher.Hash(token),
		Scopes:      scopes,
		ExpiresAt:   expires,
	})
	if err != nil {
		return nil, err
	}
	return &adminv1.MintCredentialResponse{Credential: credentialProto(c), Token: token}, nil
}

// mintScopes validates requested scope names (unknown → INVALID_ARGUMENT)
// against what the credential acts as, and returns them deduplicated and
// sorted, as Credential.scopes is documented.
func mintScopes(names []string, forAgent bool) ([]string, error) {
	parsed, err := auth.ParseScopes(names)
	if err != nil {
		return nil, invalid("scopes", err.Error())
	}
	allowed, what := humanScopes, "a human"
	if forAgent {
		allowed, what = agentScopes, "an agent"
	}
	out := make([]string, 0, len(parsed))
	for _, sc := range parsed {
		if !slices.Contains(allowed, sc) {
			return nil, invalid("scopes", fmt.Sprintf("scope %q cannot be granted to a credential for %s", sc, what))
		}
		out = append(out, string(sc))
	}
	slices.Sort(out)
	return out, nil
}

// ListCredentials lists credentials newest first, never their tokens. An
// empty human_id means the caller's own human, or every human for an
// administrator; filters on another tenant's human or agent match nothing.
func (s *Server) ListCredentials(ctx context.Context, req *adminv1.ListCredentialsRequest) (*adminv1.ListCredentialsResponse, error) {
	_, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	var f store.CredentialFilter
	if f.HumanID, err = parseOptionalID("human_id", req.GetHumanId()); err != nil {
		return nil, err
	}
	if f.AgentID, err = parseOptionalID("agent_id", req.GetAgentId()); err != nil {
		return nil, err
	}
	f.IncludeInactive = req.GetIncludeInactive()
	limit, err := pageSize(req.GetPageSize())
	if err != nil {
		return nil, err
	}
	scope := "credentials|" + idString(f.HumanID) + "|" + idString(f.AgentID) + "|" + strconv.FormatBool(f.IncludeInactive)
	before, err := decodePageToken(req.GetPageToken(), scope)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.ListCredentials(ctx, t, f, before, limit+1)
	if err != nil {
		return nil, err
	}
	rows, next := page(rows, limit, scope, func(c store.Credential) (time.Time, uuid.UUID) { return c.CreatedAt, c.ID })
	out := &adminv1.ListCredentialsResponse{Credentials: make([]*adminv1.Credential, len(rows)), NextPageToken: next}
	for i, c := range rows {
		out.Credentials[i] = credentialProto(c)
	}
	return out, nil
}

// RevokeCredential makes a credential of a human the caller may act for stop
// working. Revoking it again succeeds and keeps the first revoked_at.
func (s *Server) RevokeCredential(ctx context.Context, req *adminv1.RevokeCredentialRequest) (*adminv1.RevokeCredentialResponse, error) {
	_, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	id, err := parseID("id", req.GetId())
	if err != nil {
		return nil, err
	}
	c, err := s.store.RevokeCredential(ctx, t, id)
	if err != nil {
		return nil, err
	}
	return &adminv1.RevokeCredentialResponse{Credential: credentialProto(c)}, nil
}

func credentialProto(c store.Credential) *adminv1.Credential {
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
	}
}
