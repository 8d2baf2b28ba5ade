package mesh

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// serviceName is what a node running realtime lists in its registry stats
// (realtime.Name; importing the service from here would invert the
// dependency: the service uses the mesh, not the other way round).
const serviceName = "realtime"

// peersSQL lists the other nodes that run realtime. pkg/cluster writes
// stats.services in the same upsert that creates a node's row, so no live
// Switchboard node is ever without it: a row that lacks the key was not
// written by a node that could serve MeshService, and is not dialed.
//
// Hand-written rather than sqlc: the mesh owns no table and this is its only
// query; it reads columns pkg/cluster's queries already rely on.
const peersSQL = `
SELECT node_id, endpoint
FROM node_registry
WHERE node_id <> $1
  AND stats -> 'services' @> jsonb_build_array($2::text)`

// readPeers returns node id → endpoint for every peer in the registry.
func (m *Mesh) readPeers(ctx context.Context) (map[string]string, error) {
	rows, err := m.o.Pool.Query(ctx, peersSQL, m.o.NodeID, serviceName)
	if err != nil {
		return nil, fmt.Errorf("mesh: read node_registry: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, endpoint string
		if err := rows.Scan(&id, &endpoint); err != nil {
			return nil, fmt.Errorf("mesh: read node_registry: %w", err)
		}
		out[id] = endpoint
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("mesh: read node_registry: %w", err)
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
