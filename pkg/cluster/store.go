package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard/switchboard/pkg/cluster/internal/dbsqlc"
)

// Node is one registered process as node_registry holds it.
type Node struct {
	NodeID       string
	Endpoint     string
	Seq          int32
	RegisteredAt time.Time
	Heartbeat    time.Time
	// Stats is the free-form JSON object the node publishes each heartbeat.
	// It always carries "services" (what the node runs) and "version".
	Stats map[string]any
	// raw is Stats as stored, for cheap change detection.
	raw json.RawMessage
}

// Services lists what the node runs, read from its stats.
func (n Node) Services() []string {
	raw, _ := n.Stats["services"].([]any)
	out := make([]string, 0, len(raw))
	for _, v := range raw {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Store reads and writes node_registry. Every time comparison happens in SQL
// against the database's now(), never a node's clock.
type Store struct {
	pool *pgxpool.Pool
	q    *dbsqlc.Queries
}

// NewStore returns a store over pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool, q: dbsqlc.New()} }

// List returns every registered node ordered by seq.
func (s *Store) List(ctx context.Context) ([]Node, error) {
	rows, err := s.q.NodeList(ctx, s.pool)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	out := make([]Node, 0, len(rows))
	for _, r := range rows {
		n := Node{NodeID: r.NodeID, Endpoint: r.Endpoint, Stats: map[string]any{}, raw: r.Stats}
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

// HeartbeatAge is how long ago (database clock) nodeID last heartbeat, and
// whether it is registered at all.
func (s *Store) HeartbeatAge(ctx context.Context, nodeID string) (age time.Duration, registered bool, err error) {
	r, err := s.q.NodeClock(ctx, s.pool, nodeID)
	if err != nil {
		return 0, false, fmt.Errorf("read heartbeat age: %w", err)
	}
	return time.Duration(r.HeartbeatAgeMs) * time.Millisecond, r.Registered, nil
}

// serverStartedAt is when the Postgres server started (changes on restart
// and failover).
func (s *Store) serverStartedAt(ctx context.Context, nodeID string) (time.Time, error) {
	r, err := s.q.NodeClock(ctx, s.pool, nodeID)
	if err != nil {
		return time.Time{}, fmt.Errorf("read server start time: %w", err)
	}
	return r.ServerStartedAt, nil
}

func (s *Store) register(ctx context.Context, nodeID, endpoint string, stats json.RawMessage) (dbsqlc.NodeRegisterRow, error) {
	r, err := s.q.NodeRegister(ctx, s.pool, dbsqlc.NodeRegisterParams{NodeID: nodeID, Endpoint: endpoint, Stats: stats})
	if err != nil {
		return r, fmt.Errorf("register node: %w", err)
	}
	return r, nil
}

func (s *Store) heartbeat(ctx context.Context, nodeID string, stats json.RawMessage) (bool, error) {
	n, err := s.q.NodeHeartbeat(ctx, s.pool, dbsqlc.NodeHeartbeatParams{NodeID: nodeID, Stats: stats})
	if err != nil {
		return false, fmt.Errorf("heartbeat: %w", err)
	}
	return n == 1, nil
}

func (s *Store) sweep(ctx context.Context, self string, stale time.Duration) ([]string, error) {
	ids, err := s.q.NodeSweep(ctx, s.pool, dbsqlc.NodeSweepParams{Self: self, StaleAfterMs: stale.Milliseconds()})
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	return ids, nil
}

func (s *Store) deregister(ctx context.Context, nodeID string) error {
	if _, err := s.q.NodeDeregister(ctx, s.pool, nodeID); err != nil {
		return fmt.Errorf("deregister: %w", err)
	}
	return nil
}
