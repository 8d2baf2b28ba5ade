package realtime

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/switchboard/switchboard/pkg/ratelimit"
	"github.com/switchboard/switchboard/services/realtime/internal/store"
)

// publishLimiter applies the setting realtime.limits to client publishes:
// one token bucket per tenant and tier (durable, ephemeral) on this node,
// filled at the tier's rate and holding one second's worth. Without it one
// tenant's publisher could fill realtime_events and the node's fan-out for
// every other tenant. It counts per node (a cluster of N nodes accepts up to
// N times the rate, as ingest.limits does): it protects each node and the
// database, it is not a meter. The services' own events (presence,
// lifecycle) never pass through it.
//
// The limits are read by a loop (Options.LimitsInterval), never on a
// publish's path: a publish costs one map lookup under a mutex
// (pkg/ratelimit, the buckets ingest's webhooks use too).
type publishLimiter struct {
	limits  atomic.Pointer[store.PublishLimits]
	buckets *ratelimit.Buckets[bucketKey]
}

type bucketKey struct {
	human   uuid.UUID
	durable bool
}

func newPublishLimiter() *publishLimiter {
	l := &publishLimiter{buckets: ratelimit.New[bucketKey]()}
	def := store.DefaultPublishLimits
	l.limits.Store(&def)
	return l
}

// current is the limits in force.
func (l *publishLimiter) current() store.PublishLimits { return *l.limits.Load() }

// allow takes one token from the bucket of human's durable or ephemeral
// publishes. When there is none it returns the tier's rate and how long
// until there is one, and takes nothing: a refused publish costs nothing.
func (l *publishLimiter) allow(human uuid.UUID, durable bool, now time.Time) (ok bool, perSecond int, wait time.Duration) {
	lim := l.current()
	perSecond = lim.EphemeralPerSecond
	if durable {
		perSecond = lim.DurablePerSecond
	}
	ok, wait = l.buckets.Allow(bucketKey{human, durable}, perSecond, now)
	return ok, perSecond, wait
}

// limitsReadTimeout bounds one read of realtime.limits.
const limitsReadTimeout = 5 * time.Second

// refreshLimits reads realtime.limits; when it cannot, the limits in force
// stay (a setting that cannot be read must neither refuse every publish nor
// lift the limit).
func (s *Server) refreshLimits(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, limitsReadTimeout)
	defer cancel()
	lim, err := s.store.PublishLimits(ctx)
	if err != nil {
		if ctx.Err() == nil {
			was := s.limiter.current()
			s.log.Warn("cannot read realtime.limits; keeping the last ones", zap.Error(err),
				zap.Int("tenant_durable_per_second", was.DurablePerSecond), zap.Int("tenant_ephemeral_per_second", was.EphemeralPerSecond))
		}
		return
	}
	s.limiter.limits.Store(&lim)
}

// admit takes a token for one publish of human's, or answers
// RESOURCE_EXHAUSTED saying which limit and when to retry: in the message,
// and as a google.rpc.RetryInfo detail (which the REST edge turns into
// Retry-After).
func (s *Server) admit(human uuid.UUID, durable bool) error {
	ok, perSecond, wait := s.limiter.allow(human, durable, time.Now())
	if ok {
		return nil
	}
	return publishRateExceeded(durable, perSecond, wait)
}

func publishRateExceeded(durable bool, perSecond int, wait time.Duration) error {
	tier, field := "ephemeral", "tenant_ephemeral_per_second"
	if durable {
		tier, field = "durable", "tenant_durable_per_second"
	}
	// Whole milliseconds, rounded up: retrying at the time said must work.
	wait = (wait + time.Millisecond - 1).Truncate(time.Millisecond)
	st := status.New(codes.ResourceExhausted, fmt.Sprintf(
		"this tenant publishes more than %d %s events a second on this node, the limit (setting realtime.limits, %s); retry in %s",
		perSecond, tier, field, wait))
	if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(wait)}); err == nil {
		st = d
	}
	return st.Err()
}
