package auth

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/switchboard/switchboard/pkg/apierr"
)

// A server stream (Subscribe, WatchNodes) is authorized once, when it opens,
// and may then stay open for days. Without a second look a revoked
// credential, a disabled human or a deleted agent would keep every stream it
// had open, however soon its calls were refused. So the authenticator keeps
// the open streams by credential and CheckStreams looks at each credential
// again, through the token cache: one lookup per credential and cache
// lifetime, however many streams it holds, and none per stream.

// streamKey groups the open streams that stand or fall together: those of
// one token that named the same tenant (TenantHeader; "" for none).
type streamKey struct {
	token  [32]byte
	tenant string
}

// watchedStream is one open stream: the method it called, under which rule,
// and how to end it.
type watchedStream struct {
	method string
	rule   Rule
	end    context.CancelCauseFunc
}

// streamGroup is the open streams of one streamKey.
type streamGroup struct {
	streams map[*watchedStream]struct{}
	// tenantCheckedFor is the cache entry (its until) under which the
	// named tenant was last looked up: the tenant is checked again only
	// when the credential was, so acting in a tenant costs one more lookup
	// per cache lifetime, not one per pass.
	tenantCheckedFor time.Time
}

// openStreams is every stream the node is watching.
type openStreams struct {
	mu     sync.Mutex
	groups map[streamKey]*streamGroup
}

func (o *openStreams) add(k streamKey, s *watchedStream) {
	o.mu.Lock()
	defer o.mu.Unlock()
	g := o.groups[k]
	if g == nil {
		g = &streamGroup{streams: map[*watchedStream]struct{}{}}
		o.groups[k] = g
	}
	g.streams[s] = struct{}{}
}

func (o *openStreams) remove(k streamKey, s *watchedStream) {
	o.mu.Lock()
	defer o.mu.Unlock()
	g := o.groups[k]
	if g == nil {
		return
	}
	delete(g.streams, s)
	if len(g.streams) == 0 {
		delete(o.groups, k)
	}
}

// snapshot returns the keys being watched now.
func (o *openStreams) snapshot() []streamKey {
	o.mu.Lock()
	defer o.mu.Unlock()
	keys := make([]streamKey, 0, len(o.groups))
	for k := range o.groups {
		keys = append(keys, k)
	}
	return keys
}

// members returns the streams of k (none once they all ended).
func (o *openStreams) members(k streamKey) []*watchedStream {
	o.mu.Lock()
	defer o.mu.Unlock()
	g := o.groups[k]
	if g == nil {
		return nil
	}
	out := make([]*watchedStream, 0, len(g.streams))
	for s := range g.streams {
		out = append(out, s)
	}
	return out
}

// tenantDue reports whether k's named tenant must be looked up again for the
// cache entry that lives until until, and marks it looked up.
func (o *openStreams) tenantDue(k streamKey, until time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	g := o.groups[k]
	if g == nil || g.tenantCheckedFor.Equal(until) {
		return false
	}
	g.tenantCheckedFor = until
	return true
}

// forgetTenantCheck makes k's named tenant due again (its lookup failed).
func (o *openStreams) forgetTenantCheck(k streamKey) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if g := o.groups[k]; g != nil {
		g.tenantCheckedFor = time.Time{}
	}
}

// AuthorizeStream is Authorize for a server stream: the returned context
// also ends, with the apierr error the stream's client must get as its
// cause (context.Cause), once CheckStreams finds that its credential no
// longer verifies. release must be called when the stream ends. Open methods
// are not watched.
func (a *Authenticator) AuthorizeStream(ctx context.Context, fullMethod string) (context.Context, func(), error) {
	ctx, k, err := a.authorize(ctx, fullMethod)
	if err != nil || k == nil {
		return ctx, func() {}, err
	}
	rule, _ := RuleFor(fullMethod)
	ctx, end := context.WithCancelCause(ctx)
	s := &watchedStream{method: fullMethod, rule: rule, end: end}
	a.streams.add(*k, s)
	return ctx, func() {
		a.streams.remove(*k, s)
		end(nil)
	}, nil
}

// minStreamCheckInterval keeps a tiny cache TTL from making CheckStreams a
// busy loop.
const minStreamCheckInterval = 10 * time.Millisecond

// StreamCheckInterval is how often a node runs CheckStreams for a token
// cache TTL of ttl: an eighth of it. A pass refreshes, in the background,
// every entry in the last quarter of its life (as a request would), and the
// next pass sees the outcome; so a credential revoked at r, whose entry was
// verified at v ≤ r, ends its streams by v + ¾ttl + 2 × ttl/8 ≤ r + ttl, plus
// the lookup's own time: within the TTL in which its calls are refused.
func StreamCheckInterval(ttl time.Duration) time.Duration {
	return max(ttl/8, minStreamCheckInterval)
}

// streamCheckParallelism bounds the lookups one pass waits for at once: the
// credentials whose entry expired without a refresh (a failed one, an
// eviction), normally none.
const streamCheckParallelism = 4

// CheckStreams looks at the credential of every open stream once, and ends
// (with the error a new call would get) the streams of a credential that no
// longer verifies: UNAUTHENTICATED when it is revoked, expired, or its human
// or agent disabled or deleted; PERMISSION_DENIED when it may no longer call
// the method (an administrator demoted); NOT_FOUND or FAILED_PRECONDITION
// when the tenant it named is gone or disabled. A credential that cannot be
// checked (the database is unreachable) keeps its streams: a revocation
// cannot be seen then, and ending every healthy stream of a node during an
// outage would only send their clients to reconnect into it. They are
// checked again on the next pass. A node runs it every
// StreamCheckInterval.
func (a *Authenticator) CheckStreams(ctx context.Context) {
	var (
		mu      sync.Mutex
		failed  int
		lastErr error
	)
	note := func(err error) {
		if err != nil {
			mu.Lock()
			defer mu.Unlock()
			failed, lastErr = failed+1, err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(streamCheckParallelism)
	for _, k := range a.streams.snapshot() {
		e, ok, refresh := a.cache.get(k.token, a.now())
		if ok {
			if refresh {
				a.refresh(ctx, k.token)
			}
			note(a.judge(ctx, k, e))
			continue
		}
		g.Go(func() error {
			note(a.recheck(gctx, k))
			return nil
		})
	}
	_ = g.Wait()
	if failed > 0 && ctx.Err() == nil {
		a.log.Warn("cannot verify the credentials of open streams; they stay open until they can be",
			zap.Int("credentials", failed), zap.Error(lastErr))
	}
}

// recheck verifies k's token with the database (shared with the requests
// that carry it meanwhile) and judges its streams.
func (a *Authenticator) recheck(ctx context.Context, k streamKey) error {
	r, err, _ := a.lookups.Do(string(k.token[:]), func() (any, error) { return a.verify(ctx, k.token) })
	if err != nil {
		return err
	}
	e, _ := r.(cacheEntry)
	return a.judge(ctx, k, e)
}

// judge ends the streams of k that e (the token's current cache entry) no
// longer allows. It returns an error only when it could not tell (the named
// tenant's lookup failed): the streams then stay open.
func (a *Authenticator) judge(ctx context.Context, k streamKey, e cacheEntry) error {
	p, err := e.result()
	if err == nil && k.tenant != "" {
		if !p.Administrator {
			err = notAdministrator()
		} else if a.streams.tenantDue(k, e.until) {
			lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
			_, err = a.actIn(lctx, p, []string{k.tenant})
			cancel()
			if err != nil && !ends(err) {
				a.streams.forgetTenantCheck(k)
				return err
			}
		}
	}
	for _, s := range a.streams.members(k) {
		switch {
		case err != nil:
			s.end(err)
		case !s.rule.Allows(p):
			s.end(permissionDenied(s.method))
		}
	}
	return nil
}

// ends reports whether err is an answer about the credential or the tenant
// (which ends a stream) rather than a failure to find out.
func ends(err error) bool {
	for _, kind := range []error{
		apierr.ErrUnauthenticated, apierr.ErrPermissionDenied, apierr.ErrNotFound,
		apierr.ErrFailedPrecondition, apierr.ErrInvalidArgument,
	} {
		if errors.Is(err, kind) {
			return true
		}
	}
	return false
}
