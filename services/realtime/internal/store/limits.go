package store

import (
	"context"

	"github.com/switchboard/switchboard/pkg/settings"
)

// PublishLimits is the setting realtime.limits: the publishes per second one
// node accepts for one tenant, durable and ephemeral apart.
type PublishLimits struct {
	DurablePerSecond   int
	EphemeralPerSecond int
}

// DefaultPublishLimits is realtime.limits' default (pkg/settings), what a
// node applies until it has read the setting.
var DefaultPublishLimits = publishLimits(settings.DefaultRealtime)

// PublishLimits reads realtime.limits (its default when the row is gone).
// On an error it returns the default and the error; the caller decides
// whether to keep what it had.
func (s *Store) PublishLimits(ctx context.Context) (PublishLimits, error) {
	v, err := settings.Read(ctx, s.pool, settings.RealtimeLimits, settings.DefaultRealtime)
	return publishLimits(v), err
}

// publishLimits converts the setting. A field below 1 (only a row written
// around the API's shape check can hold one) takes its default: 0 would
// refuse every publish, and switching publishes off is not a limit.
func publishLimits(v settings.Realtime) PublishLimits {
	d := settings.DefaultRealtime
	if v.TenantDurablePerSecond < 1 {
		v.TenantDurablePerSecond = d.TenantDurablePerSecond
	}
	if v.TenantEphemeralPerSecond < 1 {
		v.TenantEphemeralPerSecond = d.TenantEphemeralPerSecond
	}
	return PublishLimits{DurablePerSecond: int(v.TenantDurablePerSecond), EphemeralPerSecond: int(v.TenantEphemeralPerSecond)}
}
