package auth_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
)

// settable is the limits as an operator changes them; refresh 0 makes the
// limiter read them on every stream.
type settable struct {
	mu  sync.Mutex
	lim auth.StreamLimits
	err error
}

func (s *settable) set(lim auth.StreamLimits, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lim, s.err = lim, err
}

func (s *settable) read(context.Context) (auth.StreamLimits, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lim, s.err
}

func exhausted(t *testing.T, err error, limit string) {
	t.Helper()
	st, _ := apierr.ToStatus(err)
	require.Equal(t, codes.ResourceExhausted, st.Code(), "%v", err)
	require.Contains(t, st.Message(), limit, "the answer names the limit")
}

func TestStreamLimiterCapsCredentialAndTenant(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	limits := &settable{lim: auth.StreamLimits{PerCredential: 2, PerTenant: 3}}
	l := auth.NewStreamLimiter(zap.NewNop(), limits.read, auth.StreamLimits{PerCredential: 100, PerTenant: 100}, 0)
	tenant := uuid.New()
	a := auth.Principal{CredentialID: uuid.New(), HumanID: tenant}
	b := auth.Principal{CredentialID: uuid.New(), HumanID: tenant}
	other := auth.Principal{CredentialID: uuid.New(), HumanID: uuid.New()}

	relA1, err := l.Acquire(ctx, a)
	require.NoError(t, err)
	_, err = l.Acquire(ctx, a)
	require.NoError(t, err)
	_, err = l.Acquire(ctx, a)
	exhausted(t, err, "max_per_credential")

	_, err = l.Acquire(ctx, b)
	require.NoError(t, err, "b has its own credential cap")
	_, err = l.Acquire(ctx, b)
	exhausted(t, err, "max_per_tenant")
	_, err = l.Acquire(ctx, other)
	require.NoError(t, err, "another tenant is not affected")

	relA1()
	relA1() // a second release gives nothing back twice
	c, tn := l.Open(a)
	require.Equal(t, []int{1, 2}, []int{c, tn})
	relB, err := l.Acquire(ctx, b)
	require.NoError(t, err, "a's closed stream freed a place of the tenant")
	_, err = l.Acquire(ctx, a)
	exhausted(t, err, "max_per_tenant")
	relB()

	// A changed setting applies to the next stream; a failed read keeps it.
	limits.set(auth.StreamLimits{PerCredential: 1, PerTenant: 10}, nil)
	_, err = l.Acquire(ctx, b)
	exhausted(t, err, "max_per_credential")
	limits.set(auth.StreamLimits{}, errors.New("database away"))
	_, err = l.Acquire(ctx, b)
	exhausted(t, err, "max_per_credential")
}

// anonStream is a server stream of a caller without credentials.
type anonStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s anonStream) Context() context.Context { return s.ctx }

// TestStreamLimiterCapsStreamsWithoutCredentials: open methods (health
// Watch, reflection) need no token, so their streams share a per-node cap;
// the mesh link, refused at once without the cluster secret, is not counted.
func TestStreamLimiterCapsStreamsWithoutCredentials(t *testing.T) {
	t.Parallel()
	l := auth.NewStreamLimiter(zap.NewNop(), (&settable{lim: auth.StreamLimits{PerCredential: 1, PerTenant: 1}}).read,
		auth.StreamLimits{PerCredential: 1, PerTenant: 1}, 0)
	l.SetMaxAnonymous(2)
	ss := anonStream{ctx: t.Context()}
	watch := &grpc.StreamServerInfo{FullMethod: "/grpc.health.v1.Health/Watch"}
	relay := &grpc.StreamServerInfo{FullMethod: "/switchboard.mesh.v1.MeshService/Relay"}

	hold, held := make(chan struct{}), make(chan struct{}, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			err := l.Intercept(nil, ss, watch, func(any, grpc.ServerStream) error { held <- struct{}{}; <-hold; return nil })
			assert.NoError(t, err)
		})
	}
	<-held
	<-held
	ran := false
	err := l.Intercept(nil, ss, watch, func(any, grpc.ServerStream) error { ran = true; return nil })
	exhausted(t, err, "without credentials")
	require.False(t, ran, "the refused stream's handler never ran")
	require.NoError(t, l.Intercept(nil, ss, relay, func(any, grpc.ServerStream) error { return nil }), "the mesh is not counted")

	close(hold)
	wg.Wait()
	require.NoError(t, l.Intercept(nil, ss, watch, func(any, grpc.ServerStream) error { return nil }), "ended streams gave their places back")
}
