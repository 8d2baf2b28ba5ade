package sources

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/keyset"
	"github.com/switchboard/switchboard/services/ingest/sources/internal/dbsqlc"
	"github.com/switchboard/switchboard/services/ingest/verify"
)

// Endpoint is a row of endpoints with its secrets described (never their
// material, which does not leave this package).
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

// Position is the endpoint's place in its lists (keyset.Row).
func (e Endpoint) Position() keyset.Cursor { return keyset.Cursor{CreatedAt: e.CreatedAt, ID: e.ID} }

// EndpointFields are an endpoint's mutable columns.
type EndpointFields struct {
	Name               string
	AgentID            *uuid.UUID
	Queue              string
	Verification       verify.Scheme
	SignatureHeader    *string
	DeliveryIDHeader   *string
	MaxBodyBytes       int32
	Enabled            bool
	HmacAlgorithm      string
	HmacEncoding       string
	SignaturePrefix    string
	ToleranceSeconds   int32
	RateLimitPerSecond int32
	// VerifyTokenSHA256 is, for meta only, the SHA-256 of the owner's
	// verify token (VerifyTokenDigest); never returned to a client.
	VerifyTokenSHA256 []byte
	// PublicURL is the URL senders post to, for schemes that sign it
	// (checkPublicURL); nil: derived from each request.
	PublicURL *string
	// TopicHeader or TopicPointer (at most one) overrides the scheme's
	// topic: a header name, an RFC 6901 JSON pointer into the body.
	TopicHeader  *string
	TopicPointer *string
	// BodyDedupWindowSeconds is the body-hash dedup window, 0 = off; nil
	// (on create or update only) means the scheme's default
	// (withBodyDedupDefault). Always set on read.
	BodyDedupWindowSeconds *int32
	// Routes are the endpoint's fan-out (table endpoint_routes), in order;
	// none sends every event to Queue and AgentID.
	Routes []Route
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

// HasSecret reports whether any secret still verifies.
func (e Endpoint) HasSecret() bool {
	return slices.ContainsFunc(e.Secrets, func(s EndpointSecret) bool { return s.Active })
}

// EndpointUpdate is what UpdateEndpoint changes.
type EndpointUpdate struct {
	// Apply sets the fields the update changes, every one but Verification,
	// on a copy of the stored ones (nil: none).
	Apply func(f *EndpointFields)
	// Verification, when set, is the new scheme.
	Verification *verify.Scheme
	// Secret is the new scheme's secret: accepted only with a change of
	// verification, and never generated (UpdateEndpoint returns none).
	Secret string
}

// Slugs are 24 random URL-safe characters (144 bits); a collision is
// retried with a fresh one.
const (
	slugLen      = 24
	slugAttempts = 5
)

func endpointFrom(r dbsqlc.Endpoint) Endpoint {
	return Endpoint{
		ID: r.ID, HumanID: r.HumanID, Slug: r.Slug, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		EndpointFields: EndpointFields{
			Name: r.Name, AgentID: r.AgentID, Queue: r.Queue, Verification: verify.Scheme(r.Verification),
			SignatureHeader: r.SignatureHeader, DeliveryIDHeader: r.DeliveryIDHeader,
			MaxBodyBytes: r.MaxBodyBytes, Enabled: r.Enabled,
			HmacAlgorithm: r.HmacAlgorithm, HmacEncoding: r.HmacEncoding, SignaturePrefix: r.SignaturePrefix,
			ToleranceSeconds: r.ToleranceSeconds, RateLimitPerSecond: r.RateLimitPerSecond, VerifyTokenSHA256: r.VerifyTokenSha256,
			PublicURL:   r.PublicUrl,
			TopicHeader: r.TopicHeader, TopicPointer: r.TopicPointer, BodyDedupWindowSeconds: &r.BodyDedupWindowSeconds,
		},
	}
}

// CreateEndpoint vends a webhook URL for humanID, which t must be able to
// act for, with its first secret: secret when given (checked for the
// scheme), else a generated one where the scheme allows, else none for a
// scheme whose provider issues it later (awaitsProviderSecret). It returns
// the endpoint and the secret's plaintext, which is never readable again
// ("" for NONE and an endpoint awaiting its secret). NOT_FOUND when the human is unknown or out of t's reach, or the
// agent is not that human's; RESOURCE_EXHAUSTED when the human holds tenant.limits' max_endpoints already.
func (s *Store) CreateEndpoint(ctx context.Context, t auth.Tenant, humanID uuid.UUID, f EndpointFields, secret string) (Endpoint, string, error) {
	applyDefaults(&f)
	if err := checkEndpoint(f); err != nil {
		return Endpoint{}, "", err
	}
	if err := checkRouteCosts(f.Routes, int64(f.MaxBodyBytes), false); err != nil {
		return Endpoint{}, "", err
	}
	if err := s.withBodyDedupDefault(ctx, s.pool, &f); err != nil {
		return Endpoint{}, "", err
	}
	plain := "" // none yet: awaitsProviderSecret
	if secret != "" || !awaitsProviderSecret(f.Verification) {
		p, err := secretFor(f.Verification, secret, true)
		if err != nil {
			return Endpoint{}, "", err
		}
		plain = p
	}
	var sealed *newSecret
	if plain != "" {
		ns, err := s.seal(f.Verification, plain)
		if err != nil {
			return Endpoint{}, "", err
		}
		sealed = &ns
	}
	for attempt := 1; ; attempt++ {
		slug, err := newSlug()
		if err != nil {
			return Endpoint{}, "", err
		}
		e, err := s.insertEndpoint(ctx, t, humanID, slug, f, sealed)
		if apierr.IsUniqueViolation(err, "endpoints_slug_key") && attempt < slugAttempts {
			continue
		}
		if err != nil {
			what := "human " + humanID.String()
			if f.AgentID != nil {
				what += " or its agent " + f.AgentID.String()
			}
			return Endpoint{}, "", dbErr(err, "insert endpoint", what)
		}
		return e, plain, nil
	}
}

func (s *Store) insertEndpoint(ctx context.Context, t auth.Tenant, humanID uuid.UUID, slug string, f EndpointFields, secret *newSecret) (Endpoint, error) {
	var out Endpoint
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.underEndpointLimit(ctx, tx, t, humanID); err != nil {
			return err
		}
		r, err := s.q.EndpointInsert(ctx, tx, dbsqlc.EndpointInsertParams{
			Slug: slug, Name: f.Name, Queue: f.Queue, Verification: string(f.Verification),
			SignatureHeader: f.SignatureHeader, DeliveryIDHeader: f.DeliveryIDHeader,
			MaxBodyBytes: f.MaxBodyBytes, Enabled: f.Enabled,
			HmacAlgorithm: f.HmacAlgorithm, HmacEncoding: f.HmacEncoding, SignaturePrefix: f.SignaturePrefix,
			ToleranceSeconds: f.ToleranceSeconds, RateLimitPerSecond: f.RateLimitPerSecond, PublicUrl: f.PublicURL,
			VerifyTokenSha256: f.VerifyTokenSHA256, TopicHeader: f.TopicHeader, TopicPointer: f.TopicPointer,
			BodyDedupWindowSeconds: *f.BodyDedupWindowSeconds, AgentID: f.AgentID, HumanID: humanID,
			Administrator: t.Administrator, CallerID: t.HumanID,
		})
		if err != nil {
			return err
		}
		if secret != nil {
			if err := s.insertSecret(ctx, tx, r.ID, *secret); err != nil {
				return err
			}
		}
		if err := s.replaceRoutes(ctx, tx, r.ID, f.Routes, false); err != nil {
			return err
		}
		out, err = s.withSecrets(ctx, tx, r)
		return err
	})
	return out, err
}

// GetEndpoint returns an endpoint of a human t may act for.
func (s *Store) GetEndpoint(ctx context.Context, t auth.Tenant, id uuid.UUID) (Endpoint, error) {
	r, err := s.q.EndpointGet(ctx, s.pool, dbsqlc.EndpointGetParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID})
	if err != nil {
		return Endpoint{}, dbErr(err, "get endpoint", "endpoint "+id.String())
	}
	return s.withSecrets(ctx, s.pool, r)
}

// ListEndpoints returns up to limit endpoints t may see, oldest first, after
// the cursor, only of humanID when it is non-nil.
func (s *Store) ListEndpoints(ctx context.Context, t auth.Tenant, humanID *uuid.UUID, after *keyset.Cursor, limit int32) ([]Endpoint, error) {
	at, aid := after.Args()
	rows, err := s.q.EndpointList(ctx, s.pool, dbsqlc.EndpointListParams{
		Administrator: t.Administrator, CallerID: t.HumanID, HumanID: humanID,
		AfterCreatedAt: at, AfterID: aid, MaxRows: limit,
	})
	if err != nil {
		return nil, dbErr(err, "list endpoints", "endpoint")
	}
	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	secrets, err := s.secretsOf(ctx, s.pool, ids)
	if err != nil {
		return nil, err
	}
	routes, err := s.routesOf(ctx, s.pool, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Endpoint, len(rows))
	for i, r := range rows {
		out[i] = endpointFrom(r)
		out[i].Secrets, out[i].Routes = secrets[r.ID], routes[r.ID]
	}
	return out, nil
}

// UpdateEndpoint changes an endpoint of a human t may act for, under its row
// lock: the fields u sets, and, with a change of verification, its secrets
// (kept where the old ones serve the new scheme, else replaced by u.Secret,
// which is then required). The slug and human never change. NOT_FOUND for an
// unknown endpoint, or an agent that is not the endpoint's human's.
func (s *Store) UpdateEndpoint(ctx context.Context, t auth.Tenant, id uuid.UUID, u EndpointUpdate) (Endpoint, error) {
	if u.Secret != "" && u.Verification == nil {
		return Endpoint{}, errSecretWithoutVerification
	}
	var out Endpoint
	err := s.withLockedEndpoint(ctx, t, id, func(tx pgx.Tx, cur Endpoint) error {
		f := cur.EndpointFields
		if u.Apply != nil {
			u.Apply(&f)
		}
		var change secretChange
		if u.Verification != nil && *u.Verification != cur.Verification {
			var err error
			if change, err = s.verificationChange(cur, *u.Verification, u.Secret); err != nil {
				return err
			}
			f.Verification = *u.Verification
		} else if u.Secret != "" {
			return errSecretWithoutVerification
		}
		if err := settleVerifyToken(cur.EndpointFields, &f); err != nil {
			return err
		}
		applyDefaults(&f)
		if err := checkEndpoint(f); err != nil {
			return err
		}
		// The budget is checked when what it depends on changes, so an
		// endpoint whose routes were stored before it can still be renamed,
		// disabled or given a new secret.
		if routesChanged := !SameRoutes(cur.Routes, f.Routes); routesChanged || f.MaxBodyBytes > cur.MaxBodyBytes {
			if err := checkRouteCosts(f.Routes, int64(f.MaxBodyBytes), !routesChanged); err != nil {
				return err
			}
		}
		if err := s.withBodyDedupDefault(ctx, tx, &f); err != nil {
			return err
		}
		r, err := s.q.EndpointUpdate(ctx, tx, dbsqlc.EndpointUpdateParams{
			Name: f.Name, AgentID: f.AgentID, Queue: f.Queue, Verification: string(f.Verification),
			SignatureHeader: f.SignatureHeader, DeliveryIDHeader: f.DeliveryIDHeader,
			MaxBodyBytes: f.MaxBodyBytes, Enabled: f.Enabled,
			HmacAlgorithm: f.HmacAlgorithm, HmacEncoding: f.HmacEncoding, SignaturePrefix: f.SignaturePrefix,
			ToleranceSeconds: f.ToleranceSeconds, RateLimitPerSecond: f.RateLimitPerSecond, PublicUrl: f.PublicURL,
			VerifyTokenSha256: f.VerifyTokenSHA256, TopicHeader: f.TopicHeader, TopicPointer: f.TopicPointer,
			BodyDedupWindowSeconds: *f.BodyDedupWindowSeconds, ID: id, Administrator: t.Administrator,
			CallerID: t.HumanID,
		})
		if err != nil {
			what := "endpoint " + id.String()
			if f.AgentID != nil {
				what = "agent " + f.AgentID.String()
			}
			return dbErr(err, "update endpoint", what)
		}
		if err := s.applySecretChange(ctx, tx, id, change); err != nil {
			return err
		}
		if !SameRoutes(cur.Routes, f.Routes) {
			if err := s.replaceRoutes(ctx, tx, id, f.Routes, true); err != nil {
				return err
			}
		}
		out, err = s.withSecrets(ctx, tx, r)
		return err
	})
	return out, err
}

// DeleteEndpoint deletes an endpoint of a human t may act for; its secrets
// and WEBHOOK adapters cascade. Every node stops accepting its webhooks as
// soon as it hears of it (see changed).
func (s *Store) DeleteEndpoint(ctx context.Context, t auth.Tenant, id uuid.UUID) error {
	slug, err := s.q.EndpointDelete(ctx, s.pool, dbsqlc.EndpointDeleteParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID})
	if err != nil {
		return dbErr(err, "delete endpoint", "endpoint "+id.String())
	}
	s.changes.changed(slug)
	return nil
}

// withLockedEndpoint runs fn in a transaction holding the row lock of an
// endpoint t may reach (NOT_FOUND otherwise), with its secrets loaded, and
// once it committed announces the endpoint's change (see changed): every
// change to an endpoint or its secrets goes through here.
func (s *Store) withLockedEndpoint(ctx context.Context, t auth.Tenant, id uuid.UUID, fn func(tx pgx.Tx, cur Endpoint) error) error {
	var slug string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		r, err := s.q.EndpointLock(ctx, tx, dbsqlc.EndpointLockParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID})
		if err != nil {
			return dbErr(err, "lock endpoint", "endpoint "+id.String())
		}
		cur, err := s.withSecrets(ctx, tx, r)
		if err != nil {
			return err
		}
		slug = cur.Slug
		return fn(tx, cur)
	})
	if err == nil {
		s.changes.changed(slug)
	}
	return err
}

// newSlug returns slugLen random URL-safe characters.
func newSlug() (string, error) {
	b := make([]byte, slugLen*3/4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate slug: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
