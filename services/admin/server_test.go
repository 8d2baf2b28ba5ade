//go:build integration

package admin_test

import (
	"testing"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/auth"
)

func TestCallerMustHoldTheAdminScopeAsAHuman(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	human := mustUUID(t, alice.human.GetId())
	agent := mustUUID(t, alice.agent.GetId())
	cases := map[string]struct {
		p    *auth.Principal
		want codes.Code
	}{
		"no principal":       {nil, codes.Unauthenticated},
		"read scope only":    {&auth.Principal{HumanID: human, Scopes: []auth.Scope{auth.ScopeRead}}, codes.PermissionDenied},
		"agent with admin":   {&auth.Principal{HumanID: human, AgentID: &agent, Scopes: []auth.Scope{auth.ScopeAdmin}}, codes.PermissionDenied},
		"administrator read": {&auth.Principal{HumanID: e.root, Scopes: []auth.Scope{auth.ScopeRead}, Administrator: true}, codes.PermissionDenied},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			if tc.p != nil {
				p := *tc.p
				p.CredentialID = uuid.New()
				ctx = auth.NewContext(ctx, p)
			}
			_, err := e.srv.GetHuman(ctx, &adminv1.GetHumanRequest{Id: alice.human.GetId()})
			requireCode(t, tc.want, err)
			_, err = e.srv.ListSettings(ctx, &adminv1.ListSettingsRequest{})
			requireCode(t, tc.want, err)
		})
	}
}
