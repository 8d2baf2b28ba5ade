//go:build integration

package cluster

import (
	"context"
	"time"
)

// Tick runs one heartbeat now (tests use a long Interval and drive ticks).
func (m *Member) Tick(ctx context.Context) error { return m.tick(ctx) }

// PretendServerStartedAt overrides the Postgres start time recorded at
// registration, as if the server had restarted since.
func (m *Member) PretendServerStartedAt(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.serverStart = t
}

// PretendLastBeat moves the last good heartbeat back, as if the process had
// been paused.
func (m *Member) PretendLastBeat(ago time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastBeat = time.Now().Add(-ago)
}
