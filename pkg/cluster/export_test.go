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

// Rewatch feeds events to the directory as a restarted watch would: a new
// snapshot (Joined… Synced) and then changes.
func (d *Directory) Rewatch(events ...Event) {
	d.mu.Lock()
	d.replay = map[string]bool{}
	d.mu.Unlock()
	for _, e := range events {
		_ = d.apply(e)
	}
}

// NodeWith is a node as node_registry would list it.
func NodeWith(id, endpoint string, services ...string) Node {
	s := make([]any, len(services))
	for i, v := range services {
		s[i] = v
	}
	return Node{NodeID: id, Endpoint: endpoint, Stats: map[string]any{"services": s}}
}
