//go:build integration

package auth_test

import (
	"context"
	"math"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"

	"github.com/switchboard/switchboard/pkg/auth"
)

// lineage is a test's family of credentials: an administrator minting a
// tenant's first credential, which mints more.
type lineage struct {
	b         *testBundle
	admin     auth.Tenant
	tenant    auth.Tenant
	rootID    uuid.UUID // the administrator's credential
	rootToken string
}

func newLineage(t *testing.T, b *testBundle) *lineage {
	t.Helper()
	m, err := b.store.MintAdmin(t.Context(), "root@example.com", "cli", false)
	require.NoError(t, err)
	ada, err := b.store.CreateHuman(t.Context(), auth.NewHuman{Email: "ada@example.com"})
	require.NoError(t, err)
	return &lineage{
		b: b, admin: auth.Tenant{Administrator: true}, tenant: auth.Tenant{HumanID: ada.ID},
		rootID: m.CredentialID, rootToken: m.Token,
	}
}

// mint mints an admin credential of the tenant from minter's call, and
// returns it with its token.
func (l *lineage) mint(t *testing.T, minter uuid.UUID) (auth.Credential, string) {
	t.Helper()
	c, tok, err := l.b.store.MintCredential(t.Context(), l.tenant,
		auth.NewCredential{HumanID: l.tenant.HumanID, Scopes: []string{"admin"}, Minter: &minter}, roomy)
	require.NoError(t, err)
	require.Equal(t, &minter, c.MintedBy, "the lineage is recorded")
	return c, tok
}

// verifies reports whether token authenticates now (a fresh authenticator:
// no cache between the test and the database).
func (l *lineage) verifies(t *testing.T, token string) bool {
	t.Helper()
	fresh := auth.NewAuthenticator(zap.NewNop(), l.b.store, l.b.hasher, ttl)
	_, err := fresh.Authorize(withToken(t.Context(), "Bearer "+token), adminMethod)
	if err != nil {
		require.Equal(t, codes.Unauthenticated, code(err), "%v", err)
	}
	return err == nil
}

// The attack: a stolen token mints itself a successor before its owner
// revokes it. Revoking it revokes everything it minted, transitively, and
// nothing else; the lineage is in the listing.
func TestRevokingACredentialRevokesWhatItMinted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := newLineage(t, b)
	first, _ := l.mint(t, l.rootID) // the tenant's first, from an administrator
	stolen, _ := l.mint(t, first.ID)
	child, childTok := l.mint(t, stolen.ID)
	_, grandchildTok := l.mint(t, child.ID)
	_, siblingTok := l.mint(t, first.ID)

	got, minted, err := b.store.RevokeCredential(t.Context(), l.tenant, stolen.ID, &first.ID)
	require.NoError(t, err)
	require.NotNil(t, got.RevokedAt)
	require.Equal(t, 2, minted, "its child and grandchild")
	require.False(t, l.verifies(t, childTok))
	require.False(t, l.verifies(t, grandchildTok))
	require.True(t, l.verifies(t, siblingTok), "what its minter minted besides is untouched")

	list, err := b.store.ListCredentials(t.Context(), l.tenant, auth.CredentialFilter{IncludeInactive: true}, nil, 100)
	require.NoError(t, err)
	parents := map[uuid.UUID]*uuid.UUID{}
	for _, c := range list {
		parents[c.ID] = c.MintedBy
	}
	require.Equal(t, &stolen.ID, parents[child.ID], "the listing shows who minted whom")

	// Revoking it again succeeds, keeps its revoked_at, and revokes nothing more.
	again, minted, err := b.store.RevokeCredential(t.Context(), l.tenant, stolen.ID, nil)
	require.NoError(t, err)
	require.Zero(t, minted)
	require.True(t, got.RevokedAt.Equal(*again.RevokedAt))
}

// An administrator's tree crosses tenants: the tenant credentials it minted
// go with it, whoever revokes it.
func TestRevokingAnAdministratorsCredentialRevokesTheTenantsItMinted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := newLineage(t, b)
	first, firstTok := l.mint(t, l.rootID)
	_, minted, err := b.store.RevokeCredential(t.Context(), l.admin, l.rootID, nil)
	require.NoError(t, err)
	require.Equal(t, 1, minted)
	require.False(t, l.verifies(t, firstTok))
	_, _, err = b.store.RevokeCredential(t.Context(), l.tenant, first.ID, nil)
	require.NoError(t, err, "the tenant still reaches its own revoked row")
}

// Rotation: a token mints its successor, and the successor revokes it. The
// successor (and what it minted) is spared; everything else the old token
// minted is revoked.
func TestSuccessorRevokesItsPredecessor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := newLineage(t, b)
	old, _ := l.mint(t, l.rootID)
	successor, successorTok := l.mint(t, old.ID)
	_, heirTok := l.mint(t, successor.ID)
	_, implantTok := l.mint(t, old.ID) // what a thief holding old left behind

	_, minted, err := b.store.RevokeCredential(t.Context(), l.tenant, old.ID, &successor.ID)
	require.NoError(t, err)
	require.Equal(t, 1, minted, "the implant only")
	require.True(t, l.verifies(t, successorTok))
	require.True(t, l.verifies(t, heirTok))
	require.False(t, l.verifies(t, implantTok))

	// The spared successor stays in its minter's tree: revoking the
	// administrator's credential above it still reaches it.
	_, _, err = b.store.RevokeCredential(t.Context(), l.admin, l.rootID, nil)
	require.NoError(t, err)
	require.False(t, l.verifies(t, successorTok))
	require.False(t, l.verifies(t, heirTok))
}

// The token cache may serve a revoked token for a few more seconds; the
// database refuses its mints at once.
func TestRevokedCredentialMintsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := newLineage(t, b)
	c, _ := l.mint(t, l.rootID)
	_, _, err := b.store.RevokeCredential(t.Context(), l.tenant, c.ID, nil)
	require.NoError(t, err)
	_, _, err = b.store.MintCredential(t.Context(), l.tenant,
		auth.NewCredential{HumanID: l.tenant.HumanID, Scopes: []string{"read"}, Minter: &c.ID}, roomy)
	require.Equal(t, codes.Unauthenticated, code(err), "%v", err)
	require.EqualError(t, err, "missing or invalid credentials")
}

// The race: a thief mints as fast as it can while the owner revokes the
// token it holds. However they interleave, once the revocation returns no
// credential minted by that token is live, and no later mint succeeds.
func TestMintsRacingARevocationNeverSurviveIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := newLineage(t, b)
	stolen, _ := l.mint(t, l.rootID)

	const thieves = 4
	var wg sync.WaitGroup
	started := make(chan struct{}, thieves)
	refusals := make(chan error, thieves)
	for range thieves {
		wg.Go(func() {
			for i := 0; ; i++ {
				_, _, err := b.store.MintCredential(context.WithoutCancel(t.Context()), l.tenant,
					auth.NewCredential{HumanID: l.tenant.HumanID, Scopes: []string{"read"}, Minter: &stolen.ID}, math.MaxInt32)
				if i == 0 {
					started <- struct{}{}
				}
				if err != nil {
					refusals <- err
					return
				}
			}
		})
	}
	for range thieves {
		recv(t, started, "a thief's first mint")
	}
	_, _, err := b.store.RevokeCredential(t.Context(), l.tenant, stolen.ID, nil)
	require.NoError(t, err)
	liveChildren := func() int {
		var n int
		require.NoError(t, b.pool.QueryRow(t.Context(),
			`SELECT count(*) FROM credentials WHERE minted_by = $1 AND revoked_at IS NULL`, stolen.ID).Scan(&n))
		return n
	}
	require.Zero(t, liveChildren(), "a mint committed beside the revocation escaped it")
	for range thieves {
		err := recv(t, refusals, "a thief's refusal")
		require.Equal(t, codes.Unauthenticated, code(err), "%v", err)
	}
	wg.Wait()
	require.Zero(t, liveChildren(), "a mint after the revocation succeeded")
}

// Deleting an administrator deletes its own credentials and revokes the
// ones they minted in other tenants: a tree never outlives its root.
func TestDeletingAHumanRevokesWhatItsCredentialsMinted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := newLineage(t, b)
	first, firstTok := l.mint(t, l.rootID)
	_, childTok := l.mint(t, first.ID)
	other, err := b.store.MintAdmin(t.Context(), "other-root@example.com", "cli", false)
	require.NoError(t, err)
	otherAdmin := auth.Tenant{HumanID: mustHuman(t, b, other.Token).HumanID, Administrator: true}
	root := mustHuman(t, b, l.rootToken)

	require.NoError(t, b.store.DeleteHuman(t.Context(), otherAdmin, root.HumanID))
	require.False(t, l.verifies(t, firstTok))
	require.False(t, l.verifies(t, childTok))
	list, err := b.store.ListCredentials(t.Context(), l.tenant, auth.CredentialFilter{IncludeInactive: true}, nil, 100)
	require.NoError(t, err)
	for _, c := range list {
		require.NotNil(t, c.RevokedAt, "credential %s", c.ID)
	}
}

// mustHuman is the principal token stands for.
func mustHuman(t *testing.T, b *testBundle, token string) auth.Principal {
	t.Helper()
	ctx, err := b.authn.Authorize(withToken(t.Context(), "Bearer "+token), adminMethod)
	require.NoError(t, err)
	p, _ := auth.FromContext(ctx)
	return p
}

// Retiring a token that is not compromised: revoked with keep_minted, an
// administrator's credential goes alone; the tenant credentials it minted
// keep working and pass to its own minter, so the lineage above them still
// reaches them, and a mint racing the revocation either lands before it
// (and is handed on) or fails.
func TestRevokingKeepingMintedHandsThemOn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := newLineage(t, b)
	first, firstTok := l.mint(t, l.rootID) // minted by the administrator's credential
	old, oldTok := l.mint(t, first.ID)
	kept, keptTok := l.mint(t, old.ID)
	_, grandchildTok := l.mint(t, kept.ID)

	got, err := b.store.RevokeCredentialKeepingMinted(t.Context(), l.tenant, old.ID)
	require.NoError(t, err)
	require.NotNil(t, got.RevokedAt)
	require.Equal(t, &first.ID, got.MintedBy, "the revoked one keeps its own place")
	require.False(t, l.verifies(t, oldTok))
	require.True(t, l.verifies(t, keptTok))
	require.True(t, l.verifies(t, grandchildTok))
	list, err := b.store.ListCredentials(t.Context(), l.tenant, auth.CredentialFilter{IncludeInactive: true}, nil, 100)
	require.NoError(t, err)
	for _, c := range list {
		if c.ID == kept.ID {
			require.Equal(t, &first.ID, c.MintedBy, "handed to the revoked one's minter")
		}
	}

	// The root of a tree hands its credentials to none.
	_, err = b.store.RevokeCredentialKeepingMinted(t.Context(), l.admin, l.rootID)
	require.NoError(t, err)
	require.True(t, l.verifies(t, firstTok), "the tenant's first credential outlives the administrator's retired token")
	again, err := b.store.ListCredentials(t.Context(), l.tenant, auth.CredentialFilter{}, nil, 100)
	require.NoError(t, err)
	for _, c := range again {
		if c.ID == first.ID {
			require.Nil(t, c.MintedBy)
		}
	}

	// Revoking above still reaches everything below, through the hand-over.
	_, minted, err := b.store.RevokeCredential(t.Context(), l.tenant, first.ID, nil)
	require.NoError(t, err)
	require.Equal(t, 2, minted, "kept and its child")
	require.False(t, l.verifies(t, keptTok))
	require.False(t, l.verifies(t, grandchildTok))

	// Out of reach is NOT_FOUND, and changes nothing.
	other, err := b.store.CreateHuman(t.Context(), auth.NewHuman{Email: "eve@example.com"})
	require.NoError(t, err)
	_, err = b.store.RevokeCredentialKeepingMinted(t.Context(), auth.Tenant{HumanID: other.ID}, first.ID)
	require.Equal(t, codes.NotFound, code(err), "%v", err)
}

// A mint racing a keep_minted revocation of its minter either commits
// first, and is handed on and stays valid, or fails: never a credential
// left pointing at a revoked minter it was not handed past.
func TestMintsRacingAKeepMintedRevocationAreHandedOn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := newLineage(t, b)
	first, _ := l.mint(t, l.rootID)
	old, _ := l.mint(t, first.ID)

	var wg sync.WaitGroup
	start := make(chan struct{})
	minted := make(chan uuid.UUID, 20)
	for range 20 {
		wg.Go(func() {
			<-start
			c, _, err := b.store.MintCredential(context.Background(), l.tenant,
				auth.NewCredential{HumanID: l.tenant.HumanID, Scopes: []string{"read"}, Minter: &old.ID}, roomy)
			if err == nil {
				minted <- c.ID
			}
		})
	}
	wg.Go(func() {
		<-start
		_, err := b.store.RevokeCredentialKeepingMinted(context.Background(), l.tenant, old.ID)
		require.NoError(t, err)
	})
	close(start)
	wg.Wait()
	close(minted)
	list, err := b.store.ListCredentials(t.Context(), l.tenant, auth.CredentialFilter{IncludeInactive: true}, nil, 100)
	require.NoError(t, err)
	byID := map[uuid.UUID]auth.Credential{}
	for _, c := range list {
		byID[c.ID] = c
	}
	for id := range minted {
		require.Equal(t, &first.ID, byID[id].MintedBy, "a mint that landed was handed on")
		require.Nil(t, byID[id].RevokedAt)
	}
}
