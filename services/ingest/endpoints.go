package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/switchboard/switchboard/services/ingest/sources"
	"github.com/switchboard/switchboard/services/ingest/verify"
)

// hookEndpoint is an endpoint as the webhook edge uses it: its row and
// limits, and a verifier over its current secrets.
type hookEndpoint struct {
	sources.Hook
	Verifier verify.Verifier
	// routes are Hook.Routes compiled (nil: none, events go to Queue).
	routes *endpointRoutes
}

// endpointCacheTTL bounds how long a changed endpoint (disabled, secret
// rotated) could keep its old behaviour on a node whose notification of the
// change was lost: every request would otherwise cost two queries and a
// decryption before any work. A change normally takes effect as soon as
// the node hears of it (forget).
const endpointCacheTTL = 5 * time.Second

// endpoints resolves slugs to hookEndpoints, caching each for
// endpointCacheTTL (unknown slugs too, so a flood of bad slugs does not
// reach the database for each request), or until the endpoint's owner
// announces a change of it (sources.Store.OnEndpointChange).
type endpoints struct {
	sources *sources.Store
	ttl     time.Duration
	// filterTimeLimit replaces the route filters' time limit when set
	// (tests).
	filterTimeLimit time.Duration

	mu    sync.Mutex
	cache map[string]cachedEndpoint
	// gen counts forgets: a load that began before one does not cache what
	// it read, which may predate the change.
	gen uint64
}

type cachedEndpoint struct {
	ep  *hookEndpoint // nil: no such endpoint
	at  time.Time
	err error
}

func newEndpoints(src *sources.Store) *endpoints {
	return &endpoints{sources: src, ttl: endpointCacheTTL, cache: map[string]cachedEndpoint{}}
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
	e.mu.Lock()
	gen := e.gen
	e.mu.Unlock()
	var prev *hookEndpoint // the expired entry: its compiled routes may serve again
	if ok {
		prev = c.ep
	}
	ep, err := e.load(ctx, slug, prev)
	if err != nil && !errors.Is(err, errNoEndpoint) && !errors.Is(err, errMisconfigured) && !errors.Is(err, errAwaitingSecret) {
		return nil, err // transient: do not cache
	}
	e.mu.Lock()
	if len(e.cache) > maxCachedEndpoints {
		clear(e.cache) // crude but bounded; entries refill within one TTL
	}
	if e.gen == gen {
		e.cache[slug] = cachedEndpoint{ep: ep, at: now, err: err}
	}
	e.mu.Unlock()
	if ep == nil && err == nil {
		return nil, errNoEndpoint
	}
	return ep, err
}

// forget drops slug's entry ("" drops them all): its endpoint changed. It
// runs on the notifier's listen goroutine, so it only takes the lock.
func (e *endpoints) forget(slug string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gen++
	if slug == "" {
		clear(e.cache)
		return
	}
	delete(e.cache, slug)
}

// maxCachedEndpoints bounds the cache under a flood of distinct slugs.
const maxCachedEndpoints = 100_000

// errMisconfigured: the endpoint's stored configuration cannot build a
// verifier (a secret sealed under a key this node lacks, say). Every request
// is refused (401 to the sender; the reason is logged).
var errMisconfigured = errors.New("ingest: endpoint cannot verify")

// errAwaitingSecret: the endpoint was created without the secret its
// provider issues later (Stripe issues it once it knows the URL), and has
// none yet. Every request is refused (401) until AddEndpointSecret; unlike
// errMisconfigured this is an expected state, not a fault.
var errAwaitingSecret = errors.New("ingest: endpoint has no secret yet")

func (e *endpoints) load(ctx context.Context, slug string, prev *hookEndpoint) (*hookEndpoint, error) {
	h, err := e.sources.Hook(ctx, slug)
	switch {
	case errors.Is(err, sources.ErrNoEndpoint):
		return nil, errNoEndpoint
	case errors.Is(err, sources.ErrMisconfigured):
		return &hookEndpoint{Hook: h}, fmt.Errorf("%w: %w", errMisconfigured, err)
	case err != nil:
		return nil, err
	}
	if h.Verify.Scheme != verify.SchemeNone && len(h.Verify.Secrets) == 0 && len(h.Verify.SecretHashes) == 0 {
		return &hookEndpoint{Hook: h}, errAwaitingSecret
	}
	v, err := verify.New(h.Verify)
	if err != nil {
		return &hookEndpoint{Hook: h}, fmt.Errorf("%w: %w", errMisconfigured, err)
	}
	routes := reusableRoutes(prev, h)
	if routes == nil {
		if routes, err = compileRoutes(h.Routes, h.MaxBodyBytes); err != nil {
			return &hookEndpoint{Hook: h}, fmt.Errorf("%w: %w", errMisconfigured, err)
		}
		if routes != nil && routes.filters != nil && e.filterTimeLimit != 0 {
			routes.filters.SetTimeLimit(e.filterTimeLimit)
		}
	}
	return &hookEndpoint{Hook: h, Verifier: v, routes: routes}, nil
}

// reusableRoutes is prev's compiled routes when h has the same routes and
// body cap, else nil. Every endpoint in use is reloaded each
// endpointCacheTTL, and compiling its filters again (CEL's parse, type
// check and plan: up to ~0.2 s of CPU for 20 filters of 2 KB) would cost
// that every 5 s, per endpoint and node, for routes that did not change.
func reusableRoutes(prev *hookEndpoint, h sources.Hook) *endpointRoutes {
	if prev == nil || prev.routes == nil || prev.MaxBodyBytes != h.MaxBodyBytes || !sources.SameRoutes(prev.Routes, h.Routes) {
		return nil
	}
	return prev.routes
}
