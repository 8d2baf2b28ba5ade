package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/pkg/secretbox"
	"github.com/switchboard/switchboard/services/ingest/internal/store"
	"github.com/switchboard/switchboard/services/ingest/internal/verify"
)

// hookEndpoint is what the webhook edge needs of an endpoint: where its
// events go, its limits, and a verifier over its current secrets.
type hookEndpoint struct {
	ID               uuid.UUID
	HumanID          uuid.UUID
	AgentID          *uuid.UUID
	Queue            string
	Enabled          bool
	MaxBodyBytes     int64
	DeliveryIDHeader string
	RatePerSecond    int // 0: no endpoint limit
	// TenantRatePerSecond is the owner's limit across its endpoints.
	TenantRatePerSecond int
	Verifier            verify.Verifier
}

// endpointCacheTTL bounds how long a changed endpoint (disabled, secret
// rotated) keeps its old behaviour on a node: every request would otherwise
// cost two queries and a decryption before any work.
const endpointCacheTTL = 5 * time.Second

// endpoints resolves slugs to hookEndpoints, caching each for
// endpointCacheTTL (unknown slugs too, so a flood of bad slugs does not
// reach the database for each request).
type endpoints struct {
	store *store.Store
	keys  *secretbox.Keyring
	ttl   time.Duration

	mu    sync.Mutex
	cache map[string]cachedEndpoint
}

type cachedEndpoint struct {
	ep  *hookEndpoint // nil: no such endpoint
	at  time.Time
	err error
}

func newEndpoints(st *store.Store, keys *secretbox.Keyring) *endpoints {
	return &endpoints{store: st, keys: keys, ttl: endpointCacheTTL, cache: map[string]cachedEndpoint{}}
}

// errNoEndpoint: unknown slug (404).
var errNoEndpoint = errors.New("ingest: no such endpoint")

// get returns the endpoint of slug, errNoEndpoint, or an error reaching the
// database (503).
func (e *endpoints) get(ctx context.Context, slug string) (*hookEndpoint, error) {
	now := time.Now()
	e.mu.Lock()
	c, ok := e.cache[slug]
	e.mu.Unlock()
	if ok && now.Sub(c.at) < e.ttl {
		if c.ep == nil {
			return nil, errNoEndpoint
		}
		return c.ep, c.err
	}
	ep, err := e.load(ctx, slug)
	if err != nil && !errors.Is(err, errNoEndpoint) && !errors.Is(err, errMisconfigured) {
		return nil, err // transient: do not cache
	}
	e.mu.Lock()
	if len(e.cache) > maxCachedEndpoints {
		clear(e.cache) // crude but bounded; entries refill within one TTL
	}
	e.cache[slug] = cachedEndpoint{ep: ep, at: now, err: err}
	e.mu.Unlock()
	if ep == nil && err == nil {
		return nil, errNoEndpoint
	}
	return ep, err
}

// maxCachedEndpoints bounds the cache under a flood of distinct slugs.
const maxCachedEndpoints = 100_000

// errMisconfigured: the endpoint's stored configuration cannot build a
// verifier (a secret sealed under a key this node lacks, say). Every request
// is refused (401 to the sender; the reason is logged).
var errMisconfigured = errors.New("ingest: endpoint cannot verify")

func (e *endpoints) load(ctx context.Context, slug string) (*hookEndpoint, error) {
	row, secrets, tenantRate, err := e.store.EndpointBySlug(ctx, slug)
	if errors.Is(err, store.ErrNoEndpoint) {
		return nil, errNoEndpoint
	}
	if err != nil {
		return nil, err
	}
	ep := &hookEndpoint{
		ID: row.ID, HumanID: row.HumanID, AgentID: row.AgentID, Queue: row.Queue, Enabled: row.Enabled,
		MaxBodyBytes: int64(row.MaxBodyBytes), RatePerSecond: int(row.RateLimitPerSecond), TenantRatePerSecond: tenantRate,
	}
	if row.DeliveryIDHeader != nil {
		ep.DeliveryIDHeader = *row.DeliveryIDHeader
	}
	cfg := verify.Config{
		Scheme:    verify.Scheme(row.Verification),
		Tolerance: time.Duration(row.ToleranceSeconds) * time.Second,
		Algorithm: row.HmacAlgorithm, Encoding: row.HmacEncoding, Prefix: row.SignaturePrefix,
	}
	if row.SignatureHeader != nil {
		cfg.Header = *row.SignatureHeader
	}
	for _, s := range secrets {
		switch s.Kind {
		case "hashed":
			cfg.SecretHashes = append(cfg.SecretHashes, s.Hash)
		case "sealed":
			if s.KeyID == nil {
				return ep, fmt.Errorf("%w: secret %s has no key id", errMisconfigured, s.ID)
			}
			plain, err := e.keys.Open(*s.KeyID, s.Sealed, SecretAAD(s.ID))
			if err != nil {
				return ep, fmt.Errorf("%w: secret %s: %w", errMisconfigured, s.ID, err)
			}
			cfg.Secrets = append(cfg.Secrets, plain)
		}
	}
	v, err := verify.New(cfg)
	if err != nil {
		return ep, fmt.Errorf("%w: %w", errMisconfigured, err)
	}
	ep.Verifier = v
	return ep, nil
}

// SecretAAD is the associated data an endpoint secret is sealed with: its
// row id, so a ciphertext copied to another row does not open.
func SecretAAD(secretID uuid.UUID) []byte { return secretID[:] }
