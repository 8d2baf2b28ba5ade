package mesh

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
)

// serviceName is what a node running realtime lists in its registry stats
// (realtime.Name; importing the service from here would invert the
// dependency: the service uses the mesh, not the other way round).
const serviceName = "realtime"

// readPeers returns node id → endpoint for every other node in the registry
// that runs realtime. pkg/cluster, which owns node_registry, writes a node's
// services in the same upsert that creates its row, so no live node is ever
// without them: a row that lists none was not written by a node that could
// serve MeshService, and is not dialed.
func (m *Mesh) readPeers(ctx context.Context) (map[string]string, error) {
	nodes, err := m.registry.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("mesh: read the registry: %w", err)
	}
	out := map[string]string{}
	for _, n := range nodes {
		if n.NodeID != m.o.NodeID && slices.Contains(n.Services(), serviceName) {
			out[n.NodeID] = n.Endpoint
		}
	}
	return out, nil
}

// refresh is one tick of the registry loop. When the registry cannot be
// read the links stay as they are: they do not depend on Postgres, and a
// database outage should not also cut off ephemeral events.
func (m *Mesh) refresh(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, max(m.o.RefreshInterval, 5*time.Second))
	defer cancel()
	want, err := m.readPeers(qctx)
	if err != nil {
		if ctx.Err() == nil {
			m.refreshFailures++
			// The first failure and then every tenth, not every tick.
			if m.refreshFailures%10 == 1 {
				m.log.Warn("mesh could not read node_registry; keeping current links",
					zap.Int("failures", m.refreshFailures), zap.Error(err))
			}
		}
		return
	}
	m.refreshFailures = 0
	m.reconcile(ctx, want)
}

// reconcile makes the peers match the registry: a peer whose row is gone
// (it left or was swept) or whose endpoint changed loses its link at once;
// a new row gets a link.
func (m *Mesh) reconcile(ctx context.Context, want map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	for id, p := range m.peers {
		ep, ok := want[id]
		if ok && ep == p.endpoint {
			continue
		}
		p.cancel()
		delete(m.peers, id)
		m.log.Info("mesh peer dropped", zap.String("peer_node_id", id), zap.String("endpoint", p.endpoint),
			zap.Bool("still_registered", ok))
	}
	for id, ep := range want {
		if _, ok := m.peers[id]; ok {
			continue
		}
		p, err := m.newPeer(id, ep)
		if err != nil {
			if m.badEndpoints[id] != ep { // once per endpoint, not every tick
				m.badEndpoints[id] = ep
				m.log.Warn("mesh cannot dial peer", zap.Error(err))
			}
			continue
		}
		delete(m.badEndpoints, id)
		// The link outlives this tick: it ends when the peer is dropped or
		// Stop forces it, never with the tick's context.
		pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		p.cancel = cancel
		m.peers[id] = p
		m.links.Add(1)
		go p.run(pctx)
		m.log.Info("mesh peer added", zap.String("peer_node_id", id), zap.String("endpoint", ep))
	}
	for id := range m.badEndpoints {
		if _, ok := want[id]; !ok {
			delete(m.badEndpoints, id)
		}
	}
}
