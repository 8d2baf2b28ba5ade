package node

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/settings"
)

// streamLimitsRefresh is how soon a change of streams.limits applies on a
// running node: at most one read of the setting per this, whatever the rate
// of new streams.
const streamLimitsRefresh = 2 * time.Second

// streamLimiter caps the node's open streams per credential and per tenant
// with the setting streams.limits (auth.StreamLimiter).
func streamLimiter(log *zap.Logger, pool *pgxpool.Pool) *auth.StreamLimiter {
	read := func(ctx context.Context) (auth.StreamLimits, error) {
		v, err := settings.Read(ctx, pool, settings.StreamLimits, settings.DefaultStreams)
		return streamLimits(v), err
	}
	return auth.NewStreamLimiter(log, read, streamLimits(settings.DefaultStreams), streamLimitsRefresh)
}

func streamLimits(s settings.Streams) auth.StreamLimits {
	return auth.StreamLimits{PerCredential: int(s.MaxPerCredential), PerTenant: int(s.MaxPerTenant)}
}
