package auth

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/switchboard/switchboard/pkg/apierr"
)

// StreamLimits bounds the streams one node keeps open at once (the setting
// streams.limits).
type StreamLimits struct {
	PerCredential int
	PerTenant     int
}

// streamLimitsTimeout bounds one read of the limits: a slow database must
// not hold every stream that opens meanwhile.
const streamLimitsTimeout = time.Second

// StreamLimiter caps the streams a credential, and a tenant (its human),
// hold open on this node: each stream holds a goroutine, buffers and HTTP/2
// state for as long as the client likes, so without a cap one token could
// hold a node's memory. It counts in memory, per node (a client that
// reaches N nodes may hold N times the limits). The limits are read through
// a function (the node reads the settings table) at most once per refresh,
// so a change takes effect within it, without a restart.
type StreamLimiter struct {
	log     *zap.Logger
	read    func(context.Context) (StreamLimits, error)
	refresh time.Duration

	readMu sync.Mutex // one read at a time; callers meanwhile wait for it
	limits StreamLimits
	readAt time.Time

	mu           sync.Mutex
	byCredential map[uuid.UUID]int
	byTenant     map[uuid.UUID]int
	anonymous    int
	maxAnonymous int
}

// MaxAnonymousStreams caps the streams of open methods a node holds at once
// (grpc.health.v1 Watch, reflection), which need no credential: without it
// anyone who reaches the port could hold a goroutine and its buffers per
// stream, 4,096 per connection, on as many connections as it likes. Client
// health checking holds one Watch per connection, so a node serving this
// many clients that use it needs a proxy in front; nothing of Switchboard's
// own opens one.
const MaxAnonymousStreams = 1000

// meshRelay is the node-to-node link: it carries no user credential but is
// refused at once without the cluster secret (services/realtime/internal/
// mesh), and a cluster holds one per pair of nodes, so it is not counted.
const meshRelay = "/switchboard.mesh.v1.MeshService/Relay"

// NewStreamLimiter returns a limiter that applies fallback until read first
// succeeds, and reads again once refresh has passed since the last read.
func NewStreamLimiter(log *zap.Logger, read func(context.Context) (StreamLimits, error), fallback StreamLimits, refresh time.Duration) *StreamLimiter {
	return &StreamLimiter{
		log: log, read: read, refresh: refresh, limits: fallback,
		byCredential: map[uuid.UUID]int{}, byTenant: map[uuid.UUID]int{}, maxAnonymous: MaxAnonymousStreams,
	}
}

// Intercept is the limiter as a gRPC stream interceptor; it must run after
// the auth interceptor, whose Principal it counts. A stream over either
// limit is refused with RESOURCE_EXHAUSTED naming it, before the handler
// runs; an admitted stream's place is given back when the handler returns,
// however it ends (its client cancelled, the server drains, an error, a
// panic on its way to the recovery interceptor). Streams without a
// principal (open methods: health, reflection) share MaxAnonymousStreams;
// the node-to-node mesh is not counted.
func (l *StreamLimiter) Intercept(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	p, ok := FromContext(ss.Context())
	if !ok {
		if info.FullMethod == meshRelay {
			return h(srv, ss)
		}
		release, err := l.acquireAnonymous()
		if err != nil {
			return err
		}
		defer release()
		return h(srv, ss)
	}
	release, err := l.Acquire(ss.Context(), p)
	if err != nil {
		return err
	}
	defer release()
	return h(srv, ss)
}

// Acquire takes a place for one stream of p, or answers RESOURCE_EXHAUSTED;
// release gives it back (calling it again does nothing).
func (l *StreamLimiter) Acquire(ctx context.Context, p Principal) (release func(), err error) {
	lim := l.current(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.byCredential[p.CredentialID]; n >= lim.PerCredential {
		return nil, apierr.ResourceExhausted("this credential already holds %d open streams on this node, "+
			"the limit (setting streams.limits, max_per_credential); close one first", n)
	}
	if n := l.byTenant[p.HumanID]; n >= lim.PerTenant {
		return nil, apierr.ResourceExhausted("this tenant's credentials already hold %d open streams on this node, "+
			"the limit (setting streams.limits, max_per_tenant); close one first", n)
	}
	l.byCredential[p.CredentialID]++
	l.byTenant[p.HumanID]++
	var once sync.Once
	return func() { once.Do(func() { l.release(p) }) }, nil
}

// acquireAnonymous takes a place for one stream without a credential.
func (l *StreamLimiter) acquireAnonymous() (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.anonymous >= l.maxAnonymous {
		return nil, apierr.ResourceExhausted("this node already holds %d open streams without credentials, "+
			"the limit; close one first", l.anonymous)
	}
	l.anonymous++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.anonymous--
		})
	}, nil
}

func (l *StreamLimiter) release(p Principal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	decrement(l.byCredential, p.CredentialID)
	decrement(l.byTenant, p.HumanID)
}

// decrement lowers m[k], deleting it at zero so the maps hold only the
// callers with open streams.
func decrement(m map[uuid.UUID]int, k uuid.UUID) {
	if m[k] <= 1 {
		delete(m, k)
		return
	}
	m[k]--
}

// Open is how many streams p's credential and tenant hold on this node.
func (l *StreamLimiter) Open(p Principal) (credential, tenant int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byCredential[p.CredentialID], l.byTenant[p.HumanID]
}

// current returns the limits, read again when refresh has passed. A failed
// read keeps the last limits (and is tried again after refresh): a setting
// that cannot be read must not refuse every stream, nor lift the caps.
func (l *StreamLimiter) current(ctx context.Context) StreamLimits {
	l.readMu.Lock()
	defer l.readMu.Unlock()
	if !l.readAt.IsZero() && time.Since(l.readAt) < l.refresh {
		return l.limits
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), streamLimitsTimeout)
	defer cancel()
	lim, err := l.read(ctx)
	l.readAt = time.Now()
	if err != nil {
		l.log.Warn("cannot read the stream limits; keeping the last ones", zap.Error(err),
			zap.Int("max_per_credential", l.limits.PerCredential), zap.Int("max_per_tenant", l.limits.PerTenant))
		return l.limits
	}
	l.limits = lim
	return lim
}
