//go:build integration

package auth_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/switchboard/switchboard/pkg/auth"
)

const enqueue = "/switchboard.queue.v1.QueueService/Enqueue"

func asTenant(ctx context.Context, token string, tenants ...string) context.Context {
	md := metadata.Pairs("authorization", "Bearer "+token)
	for _, t := range tenants {
		md.Append(auth.TenantHeader, t)
	}
	return metadata.NewIncomingContext(ctx, md)
}

// An administrator acts in its own tenant unless it names another; the
// named tenant must exist and be enabled, and only an administrator may
// name one.
func TestAdministratorNamesTheTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	root := b.mintAdmin(t, "root@example.com")
	everyone := auth.Tenant{Administrator: true}
	ada, err := b.store.CreateHuman(t.Context(), auth.NewHuman{Email: "ada@example.com"})
	require.NoError(t, err)
	gone, err := b.store.CreateHuman(t.Context(), auth.NewHuman{Email: "gone@example.com"})
	require.NoError(t, err)
	disabled := true
	_, err = b.store.UpdateHuman(t.Context(), everyone, gone.ID, auth.HumanPatch{Disabled: &disabled})
	require.NoError(t, err)
	_, adaAdmin, err := b.store.MintCredential(t.Context(), everyone, auth.NewCredential{HumanID: ada.ID, Scopes: []string{"admin"}}, roomy)
	require.NoError(t, err)

	ctx, err := b.authn.Authorize(asTenant(t.Context(), root), enqueue)
	require.NoError(t, err)
	own, _ := auth.FromContext(ctx)
	require.NotEqual(t, ada.ID, own.HumanID, "without the header: the administrator's own tenant")

	ctx, err = b.authn.Authorize(asTenant(t.Context(), root, ada.ID.String()), enqueue)
	require.NoError(t, err)
	p, _ := auth.FromContext(ctx)
	require.Equal(t, ada.ID, p.HumanID, "the named tenant")
	require.Nil(t, p.AgentID)
	require.True(t, p.Administrator, "still the administrator for cross-tenant RPCs")

	for name, tc := range map[string]struct {
		token   string
		tenants []string
		want    codes.Code
	}{
		"not an administrator":   {adaAdmin, []string{ada.ID.String()}, codes.PermissionDenied},
		"not a UUID":             {root, []string{"ada"}, codes.InvalidArgument},
		"named twice":            {root, []string{ada.ID.String(), ada.ID.String()}, codes.InvalidArgument},
		"no such tenant":         {root, []string{uuid.NewString()}, codes.NotFound},
		"a disabled tenant":      {root, []string{gone.ID.String()}, codes.FailedPrecondition},
		"a tenant admin, no one": {adaAdmin, nil, codes.OK},
	} {
		_, err := b.authn.Authorize(asTenant(t.Context(), tc.token, tc.tenants...), enqueue)
		require.Equal(t, tc.want, code(err), name)
	}
}
