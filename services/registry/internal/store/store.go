// Package store is the registry's access to node_registry: hand-written SQL in
// queries.sql, compiled by sqlc into dbsqlc, converted here to domain types so
// generated types never leave this package.
package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard/switchboard/services/registry/internal/store/dbsqlc"
)

// Node is one registered process.
type Node struct {
	NodeID       string
	Endpoint     string
	Seq          int32
	RegisteredAt time.Time
	Heartbeat    time.Time
	// Stats is the free-form JSON object the node publishes each heartbeat.
	Stats map[string]any
}

// Clock is the database's view of time and of one node's heartbeat.
type Clock struct {
	Now             time.Time
	ServerStartedAt time.Time
	Registered      bool
	HeartbeatAge    time.Duration
}

// Store reads and writes node_registry.
type Store struct {
	pool *pgxpool.Pool
	q    *dbsqlc.Queries
}

// New returns a store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool, q: dbsqlc.New()} }

// List returns every registered node ordered by seq.
func (s *Store) List(ctx context.Context) ([]Node, error) {
	rows, err := s.q.NodeList(ctx, s.pool)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	out := make([]Node, 0, len(rows))
	for _, r := range rows {
		n := Node{NodeID: r.NodeID, Endpoint: r.Endpoint, Stats: map[string]any{}}
		if r.Seq != nil {
			n.Seq = *r.Seq
		}
		if r.RegisteredAt != nil {
			n.RegisteredAt = *r.RegisteredAt
		}
		if r.Heartbeat != nil {
			n.Heartbeat = *r.Heartbeat
		}
		if len(r.Stats) > 0 {
			if err := json.Unmarshal(r.Stats, &n.Stats); err != nil {
				return nil, fmt.Errorf("node %s stats: %w", r.NodeID, err)
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// Clock reads the database clock and nodeID's heartbeat age.
func (s *Store) Clock(ctx context.Context, nodeID string) (Clock, error) {
	r, err := s.q.NodeClock(ctx, s.pool, nodeID)
	if err != nil {
		return Clock{}, fmt.Errorf("read clock: %w", err)
	}
	return Clock{
		Now:             r.DbNow,
		ServerStartedAt: r.ServerStartedAt,
		Registered:      r.Registered,
		HeartbeatAge:    time.Duration(r.HeartbeatAgeMs) * time.Millisecond,
	}, nil
}
