package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchboard/switchboard/services/admin/internal/store/dbsqlc"
)

// ErrSlugTaken is returned by CreateEndpoint when the generated slug is
// already in use; the caller retries with a fresh one.
var ErrSlugTaken = errors.New("endpoint slug already taken")

// Endpoint is a row of endpoints with its secrets (never their material,
// which does not leave the database through this store).
type Endpoint struct {
	ID      uuid.UUID
	HumanID uuid.UUID
	Slug    string
	EndpointFields
	CreatedAt time.Time
	UpdatedAt time.Time
	// Secrets are oldest first.
	Secrets []EndpointSecret
}

// EndpointFields are an endpoint's mutable columns.
type EndpointFields struct {
	Name               string
	AgentID            *uuid.UUID
	Queue              string
	Verification       string
	SignatureHeader    *string
	DeliveryIDHeader   *string
	MaxBodyBytes       int32
	Enabled            bool
	HmacAlgorithm      string
	HmacEncoding       string
	SignaturePrefix    string
	ToleranceSeconds   int32
	RateLimitPerSecond int32
}

// EndpointSecret describes a row of endpoint_secrets without its material.
type EndpointSecret struct {
	ID        uuid.UUID
	KeyID     *string
	Hint      string
	CreatedAt time.Time
	ExpiresAt *time.Time
	// Active is whether the secret still verifies (not expired by the
	// database clock).
	Active bool
}

// NewSecret is one endpoint secret to store: either sealed (KeyID and
// Sealed set, bound to ID) or hashed (Hash set).
type NewSecret struct {
	ID     uuid.UUID
	Kind   string
	KeyID  *string
	Sealed []byte
	Hash   []byte
	Hint   string
}

// SecretChange is what UpdateEndpoint does to the stored secrets.
type SecretChange struct {
	// DeleteAll removes every stored secret (before Add, if any).
	DeleteAll bool
	Add       *NewSecret
}

func endpointFrom(r dbsqlc.Endpoint) Endpoint {
	return Endpoint{
		ID: r.ID, HumanID: r.HumanID, Slug: r.Slug, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		EndpointFields: EndpointFields{
			Name: r.Name, AgentID: r.AgentID, Queue: r.Queue, Verification: r.Verification,
			SignatureHeader: r.SignatureHeader, DeliveryIDHeader: r.DeliveryIDHeader,
			MaxBodyBytes: r.MaxBodyBytes, Enabled: r.Enabled,
			HmacAlgorithm: r.HmacAlgorithm, HmacEncoding: r.HmacEncoding, SignaturePrefix: r.SignaturePrefix,
			ToleranceSeconds: r.ToleranceSeconds, RateLimitPerSecond: r.RateLimitPerSecond,
		},
	}
}

// CreateEndpoint inserts an endpoint for humanID, which t must be able to
// act for, with its first secret (nil for none), in one transaction.
// NOT_FOUND when the human is unknown or out of t's reach, or the agent is
// unknown or not that human's; ErrSlugTaken when slug is in use.
func (s *Store) CreateEndpoint(ctx context.Context, t Tenant, humanID uuid.UUID, slug string, f EndpointFields, secret *NewSecret) (Endpoint, error) {
	var out Endpoint
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		r, err := s.q.EndpointInsert(ctx, tx, dbsqlc.EndpointInsertParams{
			Slug: slug, Name: f.Name, Queue: f.Queue, Verification: f.Verification,
			SignatureHeader: f.SignatureHeader, DeliveryIDHeader: f.DeliveryIDHeader,
			MaxBodyBytes: f.MaxBodyBytes, Enabled: f.Enabled,
			HmacAlgorithm: f.HmacAlgorithm, HmacEncoding: f.HmacEncoding, SignaturePrefix: f.SignaturePrefix,
			ToleranceSeconds: f.ToleranceSeconds, RateLimitPerSecond: f.RateLimitPerSecond,
			AgentID: f.AgentID, HumanID: humanID, Administrator: t.Administrator, CallerID: t.HumanID,
		})
		if err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == uniqueViolation && pe.ConstraintName == "endpoints_slug_key" {
				return ErrSlugTaken
			}
			what := "human " + humanID.String()
			if f.AgentID != nil {
				what += " or its agent " + f.AgentID.String()
			}
			return mapErr(err, "insert endpoint", what)
		}
		if secret != nil {
			if err := s.insertSecret(ctx, tx, r.ID, *secret); err != nil {
				return err
			}
		}
		out, err = s.withSecrets(ctx, tx, r)
		return err
	})
	if err != nil {
		return Endpoint{}, err
	}
	return out, nil
}

// GetEndpoint returns an endpoint of a human t may act for.
func (s *Store) GetEndpoint(ctx context.Context, t Tenant, id uuid.UUID) (Endpoint, error) {
	r, err := s.q.EndpointGet(ctx, s.pool, dbsqlc.EndpointGetParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID})
	if err != nil {
		return Endpoint{}, mapErr(err, "get endpoint", "endpoint "+id.String())
	}
	return s.withSecrets(ctx, s.pool, r)
}

// ListEndpoints returns up to limit endpoints t may see, oldest first, after
// the cursor, only of humanID when it is non-nil.
func (s *Store) ListEndpoints(ctx context.Context, t Tenant, humanID *uuid.UUID, after *Cursor, limit int32) ([]Endpoint, error) {
	at, aid := afterArgs(after)
	rows, err := s.q.EndpointList(ctx, s.pool, dbsqlc.EndpointListParams{
		Administrator: t.Administrator, CallerID: t.HumanID, HumanID: humanID,
		AfterCreatedAt: at, AfterID: aid, MaxRows: limit,
	})
	if err != nil {
		return nil, mapErr(err, "list endpoints", "endpoint")
	}
	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	secrets, err := s.secretsOf(ctx, s.pool, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Endpoint, len(rows))
	for i, r := range rows {
		out[i] = endpointFrom(r)
		out[i].Secrets = secrets[r.ID]
	}
	return out, nil
}

// UpdateEndpoint locks an endpoint of a human t may act for and lets decide
// (which sees the stored endpoint with its secrets) return the new fields
// and what to do with the secrets; both are written in the same
// transaction. An error from decide is returned as is and changes nothing.
// NOT_FOUND for an unknown endpoint, or an agent that is not the endpoint's
// human's.
func (s *Store) UpdateEndpoint(ctx context.Context, t Tenant, id uuid.UUID,
	decide func(cur Endpoint) (EndpointFields, SecretChange, error),
) (Endpoint, error) {
	var out Endpoint
	err := s.withLockedEndpoint(ctx, t, id, func(tx pgx.Tx, cur Endpoint) error {
		f, change, err := decide(cur)
		if err != nil {
			return err
		}
		r, err := s.q.EndpointUpdate(ctx, tx, dbsqlc.EndpointUpdateParams{
			Name: f.Name, AgentID: f.AgentID, Queue: f.Queue, Verification: f.Verification,
			SignatureHeader: f.SignatureHeader, DeliveryIDHeader: f.DeliveryIDHeader,
			MaxBodyBytes: f.MaxBodyBytes, Enabled: f.Enabled,
			HmacAlgorithm: f.HmacAlgorithm, HmacEncoding: f.HmacEncoding, SignaturePrefix: f.SignaturePrefix,
			ToleranceSeconds: f.ToleranceSeconds, RateLimitPerSecond: f.RateLimitPerSecond,
			ID: id, Administrator: t.Administrator, CallerID: t.HumanID,
		})
		if err != nil {
			what := "endpoint " + id.String()
			if f.AgentID != nil {
				what = "agent " + f.AgentID.String()
			}
			return mapErr(err, "update endpoint", what)
		}
		if change.DeleteAll {
			if err := s.q.EndpointSecretDeleteAll(ctx, tx, id); err != nil {
				return fmt.Errorf("delete endpoint secrets: %w", err)
			}
		}
		if change.Add != nil {
			if err := s.insertSecret(ctx, tx, id, *change.Add); err != nil {
				return err
			}
		}
		out, err = s.withSecrets(ctx, tx, r)
		return err
	})
	if err != nil {
		return Endpoint{}, err
	}
	return out, nil
}

// AddEndpointSecret locks an endpoint of a human t may act for, lets build
// (which sees the stored endpoint) build the secret, stores it, and, when
// previousValidFor is positive, makes the endpoint's other unexpired
// secrets expire that long from now (never later than they already would).
func (s *Store) AddEndpointSecret(ctx context.Context, t Tenant, id uuid.UUID, previousValidFor time.Duration,
	build func(cur Endpoint) (NewSecret, error),
) (Endpoint, error) {
	var out Endpoint
	err := s.withLockedEndpoint(ctx, t, id, func(tx pgx.Tx, cur Endpoint) error {
		ns, err := build(cur)
		if err != nil {
			return err
		}
		if err := s.insertSecret(ctx, tx, id, ns); err != nil {
			return err
		}
		if previousValidFor > 0 {
			if err := s.q.EndpointSecretExpireOthers(ctx, tx, dbsqlc.EndpointSecretExpireOthersParams{
				ValidForMicros: previousValidFor.Microseconds(), EndpointID: id, KeepID: ns.ID,
			}); err != nil {
				return fmt.Errorf("expire endpoint secrets: %w", err)
			}
		}
		out, err = s.touched(ctx, tx, t, id)
		return err
	})
	if err != nil {
		return Endpoint{}, err
	}
	return out, nil
}

// RemoveEndpointSecret locks an endpoint of a human t may act for, lets
// check (which sees the stored endpoint) refuse, and deletes the secret.
// NOT_FOUND when the secret is not one of the endpoint's.
func (s *Store) RemoveEndpointSecret(ctx context.Context, t Tenant, id, secretID uuid.UUID,
	check func(cur Endpoint) error,
) (Endpoint, error) {
	var out Endpoint
	err := s.withLockedEndpoint(ctx, t, id, func(tx pgx.Tx, cur Endpoint) error {
		if err := check(cur); err != nil {
			return err
		}
		n, err := s.q.EndpointSecretDelete(ctx, tx, dbsqlc.EndpointSecretDeleteParams{ID: secretID, EndpointID: id})
		if err != nil {
			return mapErr(err, "delete endpoint secret", "secret "+secretID.String())
		}
		if n == 0 {
			return notFound("secret " + secretID.String())
		}
		out, err = s.touched(ctx, tx, t, id)
		return err
	})
	if err != nil {
		return Endpoint{}, err
	}
	return out, nil
}

// DeleteEndpoint deletes an endpoint of a human t may act for; its secrets
// and WEBHOOK adapters cascade.
func (s *Store) DeleteEndpoint(ctx context.Context, t Tenant, id uuid.UUID) error {
	n, err := s.q.EndpointDelete(ctx, s.pool, dbsqlc.EndpointDeleteParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID})
	if err != nil {
		return mapErr(err, "delete endpoint", "endpoint "+id.String())
	}
	if n == 0 {
		return notFound("endpoint " + id.String())
	}
	return nil
}

// withLockedEndpoint runs fn in a transaction holding the row lock of an
// endpoint t may reach (NOT_FOUND otherwise), with its secrets loaded.
func (s *Store) withLockedEndpoint(ctx context.Context, t Tenant, id uuid.UUID, fn func(tx pgx.Tx, cur Endpoint) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		r, err := s.q.EndpointLock(ctx, tx, dbsqlc.EndpointLockParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID})
		if err != nil {
			return mapErr(err, "lock endpoint", "endpoint "+id.String())
		}
		cur, err := s.withSecrets(ctx, tx, r)
		if err != nil {
			return err
		}
		return fn(tx, cur)
	})
}

// touched moves the endpoint's updated_at (its secrets changed) and returns
// it as it now is.
func (s *Store) touched(ctx context.Context, tx pgx.Tx, t Tenant, id uuid.UUID) (Endpoint, error) {
	if err := s.q.EndpointTouch(ctx, tx, id); err != nil {
		return Endpoint{}, fmt.Errorf("touch endpoint: %w", err)
	}
	r, err := s.q.EndpointGet(ctx, tx, dbsqlc.EndpointGetParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID})
	if err != nil {
		return Endpoint{}, mapErr(err, "get endpoint", "endpoint "+id.String())
	}
	return s.withSecrets(ctx, tx, r)
}

func (s *Store) insertSecret(ctx context.Context, db dbsqlc.DBTX, endpointID uuid.UUID, ns NewSecret) error {
	err := s.q.EndpointSecretInsert(ctx, db, dbsqlc.EndpointSecretInsertParams{
		ID: ns.ID, EndpointID: endpointID, Kind: ns.Kind, KeyID: ns.KeyID, Sealed: ns.Sealed, Hash: ns.Hash, Hint: ns.Hint,
	})
	if err != nil {
		return fmt.Errorf("insert endpoint secret: %w", err)
	}
	return nil
}

func (s *Store) withSecrets(ctx context.Context, db dbsqlc.DBTX, r dbsqlc.Endpoint) (Endpoint, error) {
	secrets, err := s.secretsOf(ctx, db, []uuid.UUID{r.ID})
	if err != nil {
		return Endpoint{}, err
	}
	e := endpointFrom(r)
	e.Secrets = secrets[r.ID]
	return e, nil
}

// secretsOf returns the secrets of the endpoints ids (which the caller has
// already reached), by endpoint, oldest first.
func (s *Store) secretsOf(ctx context.Context, db dbsqlc.DBTX, ids []uuid.UUID) (map[uuid.UUID][]EndpointSecret, error) {
	out := make(map[uuid.UUID][]EndpointSecret, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.q.EndpointSecretList(ctx, db, ids)
	if err != nil {
		return nil, fmt.Errorf("list endpoint secrets: %w", err)
	}
	for _, r := range rows {
		out[r.EndpointID] = append(out[r.EndpointID], EndpointSecret{
			ID: r.ID, KeyID: r.KeyID, Hint: r.Hint, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, Active: r.Active,
		})
	}
	return out, nil
}
