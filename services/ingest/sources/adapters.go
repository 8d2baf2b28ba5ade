package sources

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/keyset"
	"github.com/switchboard/switchboard/pkg/postgres"
	"github.com/switchboard/switchboard/services/ingest/sources/internal/dbsqlc"
)

// Adapter is a row of adapters.
type Adapter struct {
	ID      uuid.UUID
	HumanID uuid.UUID
	// Kind is KindWebhook or KindRedisStream; immutable.
	Kind string
	AdapterFields
	// LastPolledAt and LastError are what the node running it reported.
	LastPolledAt *time.Time
	LastError    *string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Position is the adapter's place in its lists (keyset.Row).
func (a Adapter) Position() keyset.Cursor { return keyset.Cursor{CreatedAt: a.CreatedAt, ID: a.ID} }

// AdapterFields are an adapter's columns an admin may set.
type AdapterFields struct {
	Name string
	// Config is the stored JSON object, never null (set through Config on
	// create and update, which validates it for the kind).
	Config     json.RawMessage
	EndpointID *uuid.UUID
	AgentID    *uuid.UUID
	Queue      string
	Enabled    bool
	// Cursor is the pull position; nil before the first read. Ignored by
	// CreateAdapter.
	Cursor *string
}

// AdapterUpdate is what UpdateAdapter changes.
type AdapterUpdate struct {
	// Apply sets the fields the update changes, but Config, on a copy of the
	// stored ones (nil: none).
	Apply func(f *AdapterFields)
	// SetConfig replaces the config with Config (decoded JSON), validated
	// for the adapter's kind; nil is an empty config.
	SetConfig bool
	Config    map[string]any
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

// CreateAdapter adds an adapter of kind for humanID, which t must be able to
// act for, with config (decoded JSON) validated and normalized for the kind.
// NOT_FOUND when the human is unknown or out of t's reach, or the agent or
// endpoint is not that human's; ALREADY_EXISTS when the human already has an
// adapter with the name, or another owner's adapter reads the stream (at
// any address the addr reaches); RESOURCE_EXHAUSTED when the human holds
// tenant.limits' max_adapters already.
func (s *Store) CreateAdapter(ctx context.Context, t auth.Tenant, humanID uuid.UUID, kind string, f AdapterFields, config map[string]any) (Adapter, error) {
	f.Cursor = nil
	if err := checkAdapter(kind, f); err != nil {
		return Adapter{}, err
	}
	c, err := s.adapterConfig(ctx, kind, config)
	if err != nil {
		return Adapter{}, err
	}
	f.Config = c.raw
	var r dbsqlc.Adapter
	// Two inserts of one stream at once can deadlock inside the exclusion
	// constraints (each checks against the other's not yet committed row);
	// the retry then sees the winner's committed row: ALREADY_EXISTS.
	err = postgres.RetryConflicts(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if err := s.underAdapterLimit(ctx, tx, t, humanID); err != nil {
				return err
			}
			var err error
			r, err = s.q.AdapterInsert(ctx, tx, dbsqlc.AdapterInsertParams{
				Name: f.Name, Kind: kind, Config: f.Config, SourceKey: c.sourceKey, Queue: f.Queue, Enabled: f.Enabled,
				AgentID: f.AgentID, EndpointID: f.EndpointID,
				HumanID: humanID, Administrator: t.Administrator, CallerID: t.HumanID,
			})
			if err != nil {
				return dbErr(err, "insert adapter", adapterWhat("human "+humanID.String(), f))
			}
			return s.setSourceAddrs(ctx, tx, r.ID, c.addrKeys, false)
		})
	})
	if err != nil {
		return Adapter{}, err
	}
	s.adapterChanges.changed(r.ID.String())
	return adapterFrom(r), nil
}

// setSourceAddrs records the addresses an adapter's addr reaches (nothing
// for a push adapter), replacing the ones recorded before when replace.
// Another owner's adapter reaching one of them breaks
// adapter_source_addrs_owner_excl: ALREADY_EXISTS.
func (s *Store) setSourceAddrs(ctx context.Context, tx pgx.Tx, id uuid.UUID, keys []string, replace bool) error {
	if replace {
		if err := s.q.AdapterSourceAddrsDelete(ctx, tx, id); err != nil {
			return dbErr(err, "replace adapter addresses", "adapter "+id.String())
		}
	}
	if len(keys) == 0 {
		return nil
	}
	err := s.q.AdapterSourceAddrsInsert(ctx, tx, dbsqlc.AdapterSourceAddrsInsertParams{AdapterID: id, AddrKeys: keys})
	return dbErr(err, "record adapter addresses", "adapter "+id.String())
}

// GetAdapter returns an adapter of a human t may act for.
func (s *Store) GetAdapter(ctx context.Context, t auth.Tenant, id uuid.UUID) (Adapter, error) {
	r, err := s.q.AdapterGet(ctx, s.pool, dbsqlc.AdapterGetParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID})
	if err != nil {
		return Adapter{}, dbErr(err, "get adapter", "adapter "+id.String())
	}
	return adapterFrom(r), nil
}

// ListAdapters returns up to limit adapters t may see, oldest first, after
// the cursor, only of humanID when it is non-nil.
func (s *Store) ListAdapters(ctx context.Context, t auth.Tenant, humanID *uuid.UUID, after *keyset.Cursor, limit int32) ([]Adapter, error) {
	at, aid := after.Args()
	rows, err := s.q.AdapterList(ctx, s.pool, dbsqlc.AdapterListParams{
		Administrator: t.Administrator, CallerID: t.HumanID, HumanID: humanID,
		AfterCreatedAt: at, AfterID: aid, MaxRows: limit,
	})
	if err != nil {
		return nil, dbErr(err, "list adapters", "adapter")
	}
	return postgres.Convert(rows, adapterFrom), nil
}

// UpdateAdapter changes an adapter of a human t may act for, under its row
// lock; kind and human never change, and config and endpoint are checked
// against the stored kind. NOT_FOUND for an unknown adapter, or an agent or
// endpoint that is not the adapter's human's; ALREADY_EXISTS for a name the
// human already uses, or a stream another owner's adapter reads.
func (s *Store) UpdateAdapter(ctx context.Context, t auth.Tenant, id uuid.UUID, u AdapterUpdate) (Adapter, error) {
	var set *rowConfig
	if u.SetConfig {
		// Checked before the transaction: the allow list may resolve a
		// name, which must not hold the row lock. The kind it is checked
		// for never changes.
		cur, err := s.GetAdapter(ctx, t, id)
		if err != nil {
			return Adapter{}, err
		}
		c, err := s.adapterConfig(ctx, cur.Kind, u.Config)
		if err != nil {
			return Adapter{}, err
		}
		set = &c
	}
	var out Adapter
	// Retried on a deadlock like CreateAdapter's insert: the transaction
	// holds nothing across attempts and re-reads the row each time.
	err := postgres.RetryConflicts(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			r, err := s.q.AdapterLock(ctx, tx, dbsqlc.AdapterLockParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID})
			if err != nil {
				return dbErr(err, "lock adapter", "adapter "+id.String())
			}
			cur := adapterFrom(r)
			f := cur.AdapterFields
			if u.Apply != nil {
				u.Apply(&f)
			}
			if err := checkAdapter(cur.Kind, f); err != nil {
				return err
			}
			c := set
			if c == nil {
				if c, err = storedConfig(cur.Kind, f.Config); err != nil {
					return err
				}
			}
			f.Config = c.raw
			r, err = s.q.AdapterUpdate(ctx, tx, dbsqlc.AdapterUpdateParams{
				Name: f.Name, Config: f.Config, SourceKey: c.sourceKey, EndpointID: f.EndpointID, AgentID: f.AgentID,
				Queue: f.Queue, Enabled: f.Enabled, Cursor: f.Cursor,
				ID: id, Administrator: t.Administrator, CallerID: t.HumanID,
			})
			if err != nil {
				return dbErr(err, "update adapter", adapterWhat("adapter "+id.String(), f))
			}
			if set != nil {
				if err := s.setSourceAddrs(ctx, tx, id, set.addrKeys, true); err != nil {
					return err
				}
			}
			out = adapterFrom(r)
			return nil
		})
	})
	if err == nil {
		s.adapterChanges.changed(id.String())
	}
	return out, err
}

// DeleteAdapter deletes an adapter of a human t may act for; a pull adapter
// stops polling, stored events keep existing without it.
func (s *Store) DeleteAdapter(ctx context.Context, t auth.Tenant, id uuid.UUID) error {
	n, err := s.q.AdapterDelete(ctx, s.pool, dbsqlc.AdapterDeleteParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID})
	if err = apierr.Affected(n, err, "delete adapter", "adapter "+id.String(), constraints); err != nil {
		return err
	}
	s.adapterChanges.changed(id.String())
	return nil
}
