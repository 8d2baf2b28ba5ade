package auth

import (
	"context"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/pkg/apierr"
)

// TenantHeader names the tenant (a human's id) an administrator's call acts
// in: gRPC metadata, or the HTTP header of the same name, which the gateway
// forwards. Without it every call acts in the caller's own tenant, so an
// administrator's Enqueue, Claim, ListTodos or Subscribe reaches another
// tenant's rows only when it says so. Any other caller naming a tenant is
// refused (PERMISSION_DENIED) rather than ignored, so a mistake is visible.
const TenantHeader = "x-switchboard-tenant"

// actIn applies the request's TenantHeader values to p: the one place an
// administrator switches tenants. p is returned unchanged without the header.
func (a *Authenticator) actIn(ctx context.Context, p Principal, values []string) (Principal, error) {
	if len(values) == 0 {
		return p, nil
	}
	if !p.Administrator {
		return Principal{}, notAdministrator()
	}
	if len(values) > 1 {
		return Principal{}, apierr.Invalid(apierr.FieldViolation{Field: TenantHeader, Description: "must be given once"})
	}
	id, err := uuid.Parse(values[0])
	if err != nil {
		return Principal{}, apierr.Invalid(apierr.FieldViolation{Field: TenantHeader, Description: "must be a human's id (a UUID)"})
	}
	if id == p.HumanID {
		return p, nil
	}
	h, err := a.store.GetHuman(ctx, p.Tenant(), id)
	if err != nil {
		return Principal{}, err // NOT_FOUND names the id; UNAVAILABLE when the database is
	}
	if h.DisabledAt != nil {
		return Principal{}, apierr.FailedPrecondition("tenant %s is disabled", id)
	}
	// Still the administrator (its cross-tenant RPCs keep working), now
	// acting in the named tenant and for no agent of it.
	p.HumanID, p.AgentID = id, nil
	return p, nil
}

// notAdministrator refuses a tenant named by a caller that is not an
// administrator (or no longer is: CheckStreams).
func notAdministrator() error {
	return apierr.PermissionDenied("only an administrator's admin credential may name a tenant (%s)", TenantHeader)
}
