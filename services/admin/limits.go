package admin

import (
	"context"

	"github.com/switchboard/switchboard/pkg/settings"
)

// tenantLimits reads tenant.limits, which bounds what one tenant holds.
// The limits apply to every caller, administrators included: they bound the
// tenant's rows (and what each costs the nodes), whoever creates them, and
// an administrator who wants more for a tenant raises the setting. The
// bootstrap credential and `switchboard token create` are not API calls: they
// count towards an administrator's live credentials but are never refused,
// so an operator can always get back in.
func (s *Server) tenantLimits(ctx context.Context) (settings.Tenant, error) {
	return settings.Read(ctx, s.settings, settings.TenantLimits, settings.DefaultTenant)
}
