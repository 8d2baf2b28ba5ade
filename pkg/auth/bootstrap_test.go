//go:build integration

package auth_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/auth"
)

// The attack: a tenant admin sets its own (unverified) email to the one the
// operator later bootstraps. Bootstrapping must not promote it, so neither
// its old tokens nor the bootstrap token become deployment-administrator
// credentials of the tenant's human.
func TestBootstrapNeverPromotesATenantImplicitly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	tenant, err := b.store.CreateHuman(ctx, auth.NewHuman{Email: "tenant@example.com", DisplayName: "Tenant"})
	require.NoError(t, err)
	self := auth.Tenant{HumanID: tenant.ID}
	_, tenantTok, err := b.store.MintCredential(ctx, self, auth.NewCredential{HumanID: tenant.ID, Name: "own", Scopes: []string{"admin"}}, roomy)
	require.NoError(t, err)
	taken := "ops@example.com"
	_, err = b.store.UpdateHuman(ctx, self, tenant.ID, auth.HumanPatch{Email: &taken})
	require.NoError(t, err, "a tenant may change its own email")

	bootTok, _, err := auth.NewToken()
	require.NoError(t, err)
	err = b.store.Bootstrap(ctx, "OPS@example.com", "boot", bootTok)
	require.ErrorIs(t, err, auth.ErrNotAdministrator)
	require.ErrorContains(t, err, "OPS@example.com", "the error names the conflicting email")
	_, err = b.store.MintAdmin(ctx, taken, "cli", false)
	require.ErrorIs(t, err, auth.ErrNotAdministrator)

	got, err := b.store.GetHuman(ctx, self, tenant.ID)
	require.NoError(t, err)
	require.False(t, got.IsAdmin)
	_, err = b.authn.Authorize(withToken(ctx, "Bearer "+tenantTok), clusterAdmin)
	require.Error(t, err, "the tenant's token stays a tenant's")
	_, err = b.authn.Authorize(withToken(ctx, "Bearer "+bootTok), adminMethod)
	require.Error(t, err, "the refused bootstrap token was not stored")
}

// Promotion is possible, but only when the operator asks for it by name, and
// the call says it happened.
func TestMintAdminPromotesOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	h, err := b.store.CreateHuman(ctx, auth.NewHuman{Email: "lead@example.com", DisplayName: "Lead"})
	require.NoError(t, err)
	m, err := b.store.MintAdmin(ctx, "lead@example.com", "cli", true)
	require.NoError(t, err)
	require.True(t, m.Promoted)
	got, err := b.store.GetHuman(ctx, auth.Tenant{HumanID: h.ID}, h.ID)
	require.NoError(t, err)
	require.True(t, got.IsAdmin)
	_, err = b.authn.Authorize(withToken(ctx, "Bearer "+m.Token), clusterAdmin)
	require.NoError(t, err)

	again, err := b.store.MintAdmin(ctx, "lead@example.com", "cli", false)
	require.NoError(t, err, "an administrator needs no --promote")
	require.False(t, again.Promoted)
	fresh, err := b.store.MintAdmin(ctx, "new@example.com", "cli", false)
	require.NoError(t, err, "a missing human is created as the administrator")
	require.False(t, fresh.Promoted)
}
