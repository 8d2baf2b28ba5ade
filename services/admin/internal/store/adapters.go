package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/services/admin/internal/store/dbsqlc"
)

// Adapter is a row of adapters.
type Adapter struct {
	ID      uuid.UUID
	HumanID uuid.UUID
	// Kind is "webhook" or "redis_stream" (adapters_kind_check); immutable.
	Kind string
	AdapterFields
	// LastPolledAt and LastError are written by the node's adapter runner.
	LastPolledAt *time.Time
	LastError    *string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// AdapterFields are an adapter's columns an admin may set.
type AdapterFields struct {
	Name string
	// Config is a JSON object, never null.
	Config     json.RawMessage
	EndpointID *uuid.UUID
	AgentID    *uuid.UUID
	Queue      string
	Enabled    bool
	// Cursor is the pull position; nil before the first read. Ignored by
	// CreateAdapter.
	Cursor *string
}

func adapterFrom(r dbsqlc.Adapter) Adapter {
	return Adapter{
		ID: r.ID, HumanID: r.HumanID, Kind: r.Kind,
		AdapterFields: AdapterFields{
			Name: r.Name, Config: r.Config, EndpointID: r.EndpointID, AgentID: r.AgentID,
			Queue: r.Queue, Enabled: r.Enabled, Cursor: r.Cursor,
		},
		LastPolledAt: r.LastPolledAt, LastError: r.LastError, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// adapterWhat names what a NOT_FOUND on an adapter write can be about.
func adapterWhat(first string, f AdapterFields) string {
	what := first
	if f.AgentID != nil {
		what += " or agent " + f.AgentID.String()
	}
	if f.EndpointID != nil {
		what += " or endpoint " + f.EndpointID.String()
	}
	return what
}

// CreateAdapter inserts an adapter of kind for humanID, which t must be able
// to act for. NOT_FOUND when the human is unknown or out of t's reach, or
// the agent or endpoint is unknown or not that human's; ALREADY_EXISTS when
// the human already has an adapter with the name.
func (s *Store) CreateAdapter(ctx context.Context, t Tenant, humanID uuid.UUID, kind string, f AdapterFields) (Adapter, error) {
	r, err := s.q.AdapterInsert(ctx, s.pool, dbsqlc.AdapterInsertParams{
		Name: f.Name, Kind: kind, Config: f.Config, Queue: f.Queue, Enabled: f.Enabled,
		AgentID: f.AgentID, EndpointID: f.EndpointID,
		HumanID: humanID, Administrator: t.Administrator, CallerID: t.HumanID,
	})
	if err != nil {
		return Adapter{}, mapErr(err, "insert adapter", adapterWhat("human "+humanID.String(), f))
	}
	return adapterFrom(r), nil
}

// GetAdapter returns an adapter of a human t may act for.
func (s *Store) GetAdapter(ctx context.Context, t Tenant, id uuid.UUID) (Adapter, error) {
	r, err := s.q.AdapterGet(ctx, s.pool, dbsqlc.AdapterGetParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID})
	if err != nil {
		return Adapter{}, mapErr(err, "get adapter", "adapter "+id.String())
	}
	return adapterFrom(r), nil
}

// ListAdapters returns up to limit adapters t may see, oldest first, after
// the cursor, only of humanID when it is non-nil.
func (s *Store) ListAdapters(ctx context.Context, t Tenant, humanID *uuid.UUID, after *Cursor, limit int32) ([]Adapter, error) {
	at, aid := afterArgs(after)
	rows, err := s.q.AdapterList(ctx, s.pool, dbsqlc.AdapterListParams{
		Administrator: t.Administrator, CallerID: t.HumanID, HumanID: humanID,
		AfterCreatedAt: at, AfterID: aid, MaxRows: limit,
	})
	if err != nil {
		return nil, mapErr(err, "list adapters", "adapter")
	}
	out := make([]Adapter, len(rows))
	for i, r := range rows {
		out[i] = adapterFrom(r)
	}
	return out, nil
}

// UpdateAdapter locks an adapter of a human t may act for and lets decide
// (which sees the stored adapter) return its new fields, written in the same
// transaction. An error from decide is returned as is and changes nothing.
// NOT_FOUND for an unknown adapter, or an agent or endpoint that is not the
// adapter's human's; ALREADY_EXISTS for a name the human already uses.
func (s *Store) UpdateAdapter(ctx context.Context, t Tenant, id uuid.UUID, decide func(cur Adapter) (AdapterFields, error)) (Adapter, error) {
	var out Adapter
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		r, err := s.q.AdapterLock(ctx, tx, dbsqlc.AdapterLockParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID})
		if err != nil {
			return mapErr(err, "lock adapter", "adapter "+id.String())
		}
		f, err := decide(adapterFrom(r))
		if err != nil {
			return err
		}
		r, err = s.q.AdapterUpdate(ctx, tx, dbsqlc.AdapterUpdateParams{
			Name: f.Name, Config: f.Config, EndpointID: f.EndpointID, AgentID: f.AgentID,
			Queue: f.Queue, Enabled: f.Enabled, Cursor: f.Cursor,
			ID: id, Administrator: t.Administrator, CallerID: t.HumanID,
		})
		if err != nil {
			return mapErr(err, "update adapter", adapterWhat("adapter "+id.String(), f))
		}
		out = adapterFrom(r)
		return nil
	})
	if err != nil {
		return Adapter{}, err
	}
	return out, nil
}

// DeleteAdapter deletes an adapter of a human t may act for.
func (s *Store) DeleteAdapter(ctx context.Context, t Tenant, id uuid.UUID) error {
	n, err := s.q.AdapterDelete(ctx, s.pool, dbsqlc.AdapterDeleteParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID})
	if err != nil {
		return mapErr(err, "delete adapter", "adapter "+id.String())
	}
	if n == 0 {
		return notFound("adapter " + id.String())
	}
	return nil
}
