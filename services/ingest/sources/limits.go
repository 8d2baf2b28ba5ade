package sources

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/ingest/sources/internal/dbsqlc"
)

// What one tenant may hold of this package's rows (setting tenant.limits):
// every adapter is a row, and a pull adapter a blocking Redis connection
// and a goroutine on every ingest node; every endpoint a row and a cache
// entry on the nodes its webhooks reach. Each creation counts under a
// per-tenant transaction lock, so concurrent creations cannot all pass one
// count. Lowering a limit removes nothing: it only refuses the next one.

// underAdapterLimit locks humanID's adapter creations until tx ends and
// refuses one more than tenant.limits' max_adapters (read in tx, after the
// lock, so a changed limit applies at once). A human out of t's reach
// holds none here: its insert is NOT_FOUND, never RESOURCE_EXHAUSTED.
func (s *Store) underAdapterLimit(ctx context.Context, tx pgx.Tx, t auth.Tenant, humanID uuid.UUID) error {
	lock := dbsqlc.AdapterLockTenantParams{HumanID: humanID, Administrator: t.Administrator, CallerID: t.HumanID}
	if err := s.q.AdapterLockTenant(ctx, tx, lock); err != nil {
		return dbErr(err, "lock tenant's adapters", "adapter")
	}
	n, err := s.q.AdapterCount(ctx, tx, dbsqlc.AdapterCountParams(lock))
	if err != nil {
		return dbErr(err, "count adapters", "adapter")
	}
	return underLimit(ctx, tx, n, "adapters", "max_adapters", "delete one first",
		func(l settings.Tenant) int32 { return l.MaxAdapters })
}

// underEndpointLimit is underAdapterLimit for endpoints (max_endpoints).
func (s *Store) underEndpointLimit(ctx context.Context, tx pgx.Tx, t auth.Tenant, humanID uuid.UUID) error {
	lock := dbsqlc.EndpointLockTenantParams{HumanID: humanID, Administrator: t.Administrator, CallerID: t.HumanID}
	if err := s.q.EndpointLockTenant(ctx, tx, lock); err != nil {
		return dbErr(err, "lock tenant's endpoints", "endpoint")
	}
	n, err := s.q.EndpointCount(ctx, tx, dbsqlc.EndpointCountParams(lock))
	if err != nil {
		return dbErr(err, "count endpoints", "endpoint")
	}
	return underLimit(ctx, tx, n, "endpoints", "max_endpoints", "delete one first",
		func(l settings.Tenant) int32 { return l.MaxEndpoints })
}

// underLimit refuses one more when a tenant holds n of what and the limit
// field picks from tenant.limits allows no more.
func underLimit(ctx context.Context, tx pgx.Tx, n int64, what, field, fix string, limit func(settings.Tenant) int32) error {
	limits, err := settings.Read(ctx, tx, settings.TenantLimits, settings.DefaultTenant)
	if err != nil {
		return dbErr(err, "read tenant.limits", "setting "+settings.TenantLimits)
	}
	if most := int64(limit(limits)); n >= most {
		return apierr.TenantLimit(n, what, field, most, fix)
	}
	return nil
}
