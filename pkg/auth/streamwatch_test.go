//go:build integration

package auth_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"

	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/pgtest"
)

const (
	subscribe  = "/switchboard.realtime.v1.RealtimeService/Subscribe"
	watchNodes = "/switchboard.registry.v1.RegistryService/WatchNodes"
)

// stream is an open stream as the gRPC interceptor holds it.
type stream struct {
	ctx     context.Context
	release func()
}

func openStream(t *testing.T, b *testBundle, ctx context.Context, method string) stream {
	t.Helper()
	sctx, release, err := b.authn.AuthorizeStream(ctx, method)
	require.NoError(t, err)
	t.Cleanup(release)
	return stream{ctx: sctx, release: release}
}

// ended reports the code a stream was ended with (OK: still open).
func (s stream) ended() codes.Code {
	if s.ctx.Err() == nil {
		return codes.OK
	}
	return code(context.Cause(s.ctx))
}

// pastRefresh moves the clock into the last quarter of every entry's life
// and runs the pass that refreshes them, then the pass that sees the
// outcome: what a node does within one TTL.
func pastRefresh(b *testBundle) {
	b.clock.Advance(auth.RefreshAfter(ttl) + time.Millisecond)
	b.authn.CheckStreams(context.Background())
	b.authn.WaitRefreshes()
	b.authn.CheckStreams(context.Background())
}

// The attack: a stream opened before its credential was revoked keeps
// delivering. Within the TTL the pass ends every stream of that token with
// UNAUTHENTICATED, looking it up once however many streams it holds, and
// leaves everyone else's alone.
func TestRevokedCredentialsStreamsEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := newLineage(t, b)
	victim, victimTok := l.mint(t, l.rootID)
	_, bystanderTok := l.mint(t, l.rootID)
	var streams []stream
	for range 3 {
		streams = append(streams, openStream(t, b, withToken(t.Context(), "Bearer "+victimTok), subscribe))
	}
	bystander := openStream(t, b, withToken(t.Context(), "Bearer "+bystanderTok), subscribe)
	g := newGate(t, b)
	g.allow(100)

	_, _, err := b.store.RevokeCredential(t.Context(), l.tenant, victim.ID, nil)
	require.NoError(t, err)
	b.authn.CheckStreams(t.Context())
	require.Equal(t, codes.OK, streams[0].ended(), "the cache still vouches for it: calls pass too")

	pastRefresh(b)
	for _, s := range streams {
		require.Equal(t, codes.Unauthenticated, s.ended())
		require.EqualError(t, context.Cause(s.ctx), "missing or invalid credentials")
	}
	require.Equal(t, codes.OK, bystander.ended())
	require.EqualValues(t, 2, g.lookups.Load(), "one lookup per credential, not per stream")

	s := openStream(t, b, withToken(t.Context(), "Bearer "+bystanderTok), subscribe)
	s.release()
	b.authn.CheckStreams(t.Context())
	require.Equal(t, codes.Canceled, code(s.ctx.Err()), "a released stream is no longer watched")
}

// A disabled human, or a deleted agent, ends its streams as a revocation does.
func TestDisabledHumanAndDeletedAgentStreamsEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := newLineage(t, b)
	agent, err := b.store.CreateAgent(t.Context(), l.tenant, auth.NewAgent{HumanID: l.tenant.HumanID, Name: "w", Metadata: []byte(`{}`)}, roomy)
	require.NoError(t, err)
	_, agentTok, err := b.store.MintCredential(t.Context(), l.tenant,
		auth.NewCredential{HumanID: l.tenant.HumanID, AgentID: &agent.ID, Scopes: []string{"agent"}}, roomy)
	require.NoError(t, err)
	_, humanTok := l.mint(t, l.rootID)
	worker := openStream(t, b, withToken(t.Context(), "Bearer "+agentTok), subscribe)
	human := openStream(t, b, withToken(t.Context(), "Bearer "+humanTok), subscribe)

	require.NoError(t, b.store.DeleteAgent(t.Context(), l.tenant, agent.ID))
	pastRefresh(b)
	require.Equal(t, codes.Unauthenticated, worker.ended())
	require.Equal(t, codes.OK, human.ended())

	disabled := true
	_, err = b.store.UpdateHuman(t.Context(), l.admin, l.tenant.HumanID, auth.HumanPatch{Disabled: &disabled})
	require.NoError(t, err)
	pastRefresh(b)
	require.Equal(t, codes.Unauthenticated, human.ended())
}

// An administrator's streams: demoted, it loses the cluster view (PERMISSION_
// DENIED) and the tenant it acted in; revoked, everything; and a stream in a
// tenant ends when that tenant is disabled.
func TestAdministratorsStreamsFollowItsRole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := newLineage(t, b)
	own := openStream(t, b, withToken(t.Context(), "Bearer "+l.rootToken), subscribe)
	cluster := openStream(t, b, withToken(t.Context(), "Bearer "+l.rootToken), watchNodes)
	inAda := openStream(t, b, asTenant(t.Context(), l.rootToken, l.tenant.HumanID.String()), subscribe)
	root := mustHuman(t, b, l.rootToken)

	demoted := false
	_, err := b.store.UpdateHuman(t.Context(), l.admin, root.HumanID, auth.HumanPatch{IsAdmin: &demoted})
	require.NoError(t, err)
	pastRefresh(b)
	require.Equal(t, codes.PermissionDenied, cluster.ended())
	require.Equal(t, codes.PermissionDenied, inAda.ended(), "no longer may it act in another tenant")
	require.Equal(t, codes.OK, own.ended(), "its own tenant's stream it may keep")

	promoted := true
	_, err = b.store.UpdateHuman(t.Context(), l.admin, root.HumanID, auth.HumanPatch{IsAdmin: &promoted})
	require.NoError(t, err)
	pastRefresh(b)
	inAda = openStream(t, b, asTenant(t.Context(), l.rootToken, l.tenant.HumanID.String()), subscribe)
	disabled := true
	_, err = b.store.UpdateHuman(t.Context(), l.admin, l.tenant.HumanID, auth.HumanPatch{Disabled: &disabled})
	require.NoError(t, err)
	pastRefresh(b)
	require.Equal(t, codes.FailedPrecondition, inAda.ended(), "the tenant it acts in was disabled")

	_, _, err = b.store.RevokeCredential(t.Context(), l.admin, l.rootID, nil)
	require.NoError(t, err)
	pastRefresh(b)
	require.Equal(t, codes.Unauthenticated, own.ended())
}

// A database outage says nothing about a credential: its streams stay open
// (ending them would send every client of the node to reconnect into the
// outage), however long it lasts.
func TestDatabaseOutageKeepsStreamsOpen(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.mintAdmin(t, "root@example.com")
	// The node's own pool, which the outage takes away; b.pool stays for
	// the test.
	pool := pgtest.OpenPool(t, b.url, nil)
	authn := auth.NewAuthenticator(zap.NewNop(), auth.NewStore(pool, b.hasher), b.hasher, ttl)
	authn.SetClock(b.clock.Now)
	ctx, release, err := authn.AuthorizeStream(withToken(t.Context(), "Bearer "+tok), subscribe)
	require.NoError(t, err)
	defer release()

	pool.Close()
	for range 3 {
		b.clock.Advance(ttl)
		authn.CheckStreams(t.Context())
		authn.WaitRefreshes()
	}
	require.NoError(t, ctx.Err(), "the stream was ended by an outage")
	_, err = authn.Authorize(withToken(t.Context(), "Bearer "+tok), subscribe)
	require.Equal(t, codes.Unavailable, code(err), "while a new call is told to retry")
}
