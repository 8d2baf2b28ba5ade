package auth

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth/internal/dbsqlc"
	"github.com/switchboard/switchboard/pkg/keyset"
	"github.com/switchboard/switchboard/pkg/postgres"
)

// Agent is a row of agents: a persona owned by a human.
type Agent struct {
	ID          uuid.UUID
	HumanID     uuid.UUID
	Name        string
	Description string
	// Metadata is a JSON object, never null.
	Metadata   json.RawMessage
	CreatedAt  time.Time
	UpdatedAt  time.Time
	DisabledAt *time.Time
}

// Position is the agent's place in its lists (keyset.Row).
func (a Agent) Position() keyset.Cursor { return keyset.Cursor{CreatedAt: a.CreatedAt, ID: a.ID} }

// NewAgent is what CreateAgent stores.
type NewAgent struct {
	HumanID     uuid.UUID
	Name        string
	Description string
	// Metadata must be a JSON object.
	Metadata json.RawMessage
}

// AgentPatch names the fields an update changes; nil leaves a field as is.
type AgentPatch struct {
	Name        *string
	Description *string
	// Metadata, when non-nil, replaces the whole object.
	Metadata json.RawMessage
	// Disabled true disables the agent as of the database's now(); false
	// re-enables it.
	Disabled *bool
}

// CreateAgent inserts an agent for a.HumanID, which t must be able to act
// for; otherwise (or when the human does not exist) NOT_FOUND. The human may
// hold at most maxAgents (tenant.limits' max_agents): one more is
// RESOURCE_EXHAUSTED, also under concurrent calls (the count and the insert
// run under the tenant's lock).
func (s *Store) CreateAgent(ctx context.Context, t Tenant, a NewAgent, maxAgents int) (Agent, error) {
	var row dbsqlc.Agent
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		lock := dbsqlc.AgentLockTenantParams{HumanID: a.HumanID, Administrator: t.Administrator, CallerID: t.HumanID}
		if err := s.q.AgentLockTenant(ctx, tx, lock); err != nil {
			return dbErr(err, "lock tenant's agents", "agent")
		}
		n, err := s.q.AgentCount(ctx, tx, dbsqlc.AgentCountParams(lock))
		if err != nil {
			return dbErr(err, "count agents", "agent")
		}
		if n >= int64(maxAgents) {
			return apierr.TenantLimit(n, "agents", "max_agents", int64(maxAgents), "delete one first")
		}
		row, err = s.q.AgentInsert(ctx, tx, dbsqlc.AgentInsertParams{
			Name: a.Name, Description: a.Description, Metadata: a.Metadata,
			HumanID: a.HumanID, Administrator: t.Administrator, CallerID: t.HumanID,
		})
		return dbErr(err, "insert agent", "human "+a.HumanID.String())
	})
	if err != nil {
		return Agent{}, err
	}
	return Agent(row), nil
}

// GetAgent returns an agent of a human t may act for.
func (s *Store) GetAgent(ctx context.Context, t Tenant, id uuid.UUID) (Agent, error) {
	r, err := s.q.AgentGet(ctx, s.pool, dbsqlc.AgentGetParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID})
	if err != nil {
		return Agent{}, dbErr(err, "get agent", "agent "+id.String())
	}
	return Agent(r), nil
}

// ListAgents returns up to limit agents t may see, oldest first, after the
// cursor, only of humanID when it is non-nil.
func (s *Store) ListAgents(ctx context.Context, t Tenant, humanID *uuid.UUID, after *keyset.Cursor, limit int32) ([]Agent, error) {
	at, aid := after.Args()
	rows, err := s.q.AgentList(ctx, s.pool, dbsqlc.AgentListParams{
		Administrator: t.Administrator, CallerID: t.HumanID, HumanID: humanID,
		AfterCreatedAt: at, AfterID: aid, MaxRows: limit,
	})
	if err != nil {
		return nil, dbErr(err, "list agents", "agent")
	}
	return postgres.Convert(rows, func(r dbsqlc.Agent) Agent { return Agent(r) }), nil
}

// UpdateAgent applies p to an agent of a human t may act for.
func (s *Store) UpdateAgent(ctx context.Context, t Tenant, id uuid.UUID, p AgentPatch) (Agent, error) {
	arg := dbsqlc.AgentUpdateParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID}
	if p.Name != nil {
		arg.SetName, arg.Name = true, *p.Name
	}
	if p.Description != nil {
		arg.SetDescription, arg.Description = true, *p.Description
	}
	if p.Metadata != nil {
		arg.SetMetadata, arg.Metadata = true, p.Metadata
	}
	if p.Disabled != nil {
		arg.SetDisabled, arg.Disabled = true, *p.Disabled
	}
	r, err := s.q.AgentUpdate(ctx, s.pool, arg)
	if err != nil {
		return Agent{}, dbErr(err, "update agent", "agent "+id.String())
	}
	return Agent(r), nil
}

// DeleteAgent deletes an agent of a human t may act for, and its
// credentials (ON DELETE CASCADE).
func (s *Store) DeleteAgent(ctx context.Context, t Tenant, id uuid.UUID) error {
	n, err := s.q.AgentDelete(ctx, s.pool, dbsqlc.AgentDeleteParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID})
	return apierr.Affected(n, err, "delete agent", "agent "+id.String(), constraints)
}
