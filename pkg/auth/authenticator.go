package auth

import (
	"context"
	"crypto/subtle"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"
	"google.golang.org/grpc/metadata"

	"github.com/switchboard/switchboard/pkg/apierr"
)

// Client-facing messages. Every way a credential can fail gets the same
// words, so a caller learns nothing about which part was wrong.
const (
	msgUnauthenticated = "missing or invalid credentials"
	msgDenied          = "this credential may not call %s"
)

// cacheEntries bounds the verified-token cache.
const cacheEntries = 100_000

// Authenticator verifies bearer tokens and applies the policy; it is the
// check behind the gRPC auth interceptor (and so behind the gateway, which
// forwards the Authorization header as gRPC metadata).
type Authenticator struct {
	log    *zap.Logger
	store  *Store
	hasher *Hasher
	cache  *cache
	now    func() time.Time

	// lookups makes concurrent verifications of one token (misses and the
	// background refresh alike) share one database statement: each stamps
	// last_used_at on the same row, so a crowd of them queues on its lock.
	lookups   singleflight.Group
	refreshes sync.WaitGroup // background refreshes in flight
	// refreshMu orders starting a refresh against Close: none starts once
	// closed is set, so Close's wait covers every one that did.
	refreshMu sync.Mutex
	closed    bool

	// streams are the open streams CheckStreams watches (streamwatch.go).
	streams openStreams

	// lookup is the store's credential lookup; tests wrap it to count and
	// hold lookups.
	lookup func(ctx context.Context, hash []byte) (Principal, time.Duration, error)
	// joined, when set (tests), runs once a request waits on a lookup.
	joined func()
}

// NewAuthenticator verifies tokens against store, caching results for ttl.
func NewAuthenticator(log *zap.Logger, store *Store, hasher *Hasher, ttl time.Duration) *Authenticator {
	return &Authenticator{
		log: log, store: store, hasher: hasher, cache: newCache(ttl, cacheEntries), now: time.Now, lookup: store.authenticate,
		streams: openStreams{groups: map[streamKey]*streamGroup{}},
	}
}

// Authorize checks the caller of fullMethod ("/pkg.Service/Method") and
// returns ctx carrying its Principal, moved to the tenant an administrator
// names in TenantHeader. Open methods pass without a token.
// Errors are apierr kinds: Unauthenticated, PermissionDenied, or Unavailable
// when the credentials cannot be checked at all; or ctx's own error when it
// ends while the call waits for the database to verify the token.
func (a *Authenticator) Authorize(ctx context.Context, fullMethod string) (context.Context, error) {
	ctx, _, err := a.authorize(ctx, fullMethod)
	return ctx, err
}

// authorize is Authorize, which also returns what a stream of the call is
// watched by (AuthorizeStream): the token's cache key and the tenant it
// named; nil for an open method.
func (a *Authenticator) authorize(ctx context.Context, fullMethod string) (context.Context, *streamKey, error) {
	rule, ok := RuleFor(fullMethod)
	if !ok {
		// Deny by default: a method without a rule is a bug, not open.
		a.log.Error("no authorization rule for method; denying", zap.String("grpc_method", fullMethod))
		return nil, nil, permissionDenied(fullMethod)
	}
	if rule.Open {
		return ctx, nil, nil
	}
	token, ok := bearer(ctx)
	if !ok || ParseToken(token) != nil {
		return nil, nil, unauthenticated()
	}
	key := a.key(token)
	p, err := a.principal(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	if !rule.Allows(p) {
		return nil, nil, permissionDenied(fullMethod)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	named := md.Get(TenantHeader)
	if p, err = a.actIn(ctx, p, named); err != nil {
		return nil, nil, err
	}
	sk := &streamKey{token: key}
	if len(named) == 1 {
		sk.tenant = named[0]
	}
	return NewContext(ctx, p), sk, nil
}

// Authenticate checks who calls fullMethod, not what they may do: an open
// method passes, any other needs a known, unexpired, unrevoked credential in
// authorization (the Authorization header's values, "Bearer <token>"). It
// verifies exactly as Authorize does, through the same cache; the scope check
// stays with Authorize, which the gRPC interceptor runs on every call. The
// REST edge calls it before reading a request body, so an anonymous caller
// cannot make a node read or parse one. Errors are Authorize's kinds, minus
// PermissionDenied.
func (a *Authenticator) Authenticate(ctx context.Context, fullMethod string, authorization []string) error {
	if rule, ok := RuleFor(fullMethod); ok && rule.Open {
		return nil
	}
	_, err := a.Identify(ctx, authorization)
	return err
}

// Identify is Authenticate for an edge that must know who calls before it
// reads a body, not only that the credential is valid: the verified
// Principal of the credential in authorization, as it stands (never moved
// to the tenant of a TenantHeader; that stays Authorize's). The MCP edge
// counts each caller's requests in progress by it. Errors are
// Authenticate's.
func (a *Authenticator) Identify(ctx context.Context, authorization []string) (Principal, error) {
	token, ok := bearerToken(authorization)
	if !ok || ParseToken(token) != nil {
		return Principal{}, unauthenticated()
	}
	return a.principal(ctx, a.key(token))
}

// key is token's cache key: its keyed hash, which is also what the
// credentials table stores.
func (a *Authenticator) key(token string) [32]byte {
	var key [32]byte
	copy(key[:], a.hasher.Hash(token))
	return key
}

// bearer extracts the token from "authorization: Bearer <token>".
func bearer(ctx context.Context) (string, bool) {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return "", false
	}
	return bearerToken(md.Get("authorization"))
}

// bearerToken extracts the token from the values of an authorization
// header (gRPC metadata or HTTP): exactly one "Bearer <token>".
func bearerToken(values []string) (string, bool) {
	if len(values) != 1 {
		return "", false
	}
	scheme, token, found := strings.Cut(values[0], " ")
	// Constant-time like the rest of the path, though the scheme is public.
	if !found || subtle.ConstantTimeCompare([]byte(strings.ToLower(scheme)), []byte("bearer")) != 1 {
		return "", false
	}
	return strings.TrimSpace(token), true
}

func unauthenticated() error { return apierr.Unauthenticated(msgUnauthenticated) }

func permissionDenied(method string) error { return apierr.PermissionDenied(msgDenied, method) }
