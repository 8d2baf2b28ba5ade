// Package registry is the cluster's view of itself: the nodes registered in
// the UNLOGGED node_registry table, node health (GET /health) and the cluster
// admin list (GET /api/admin/cluster).
package registry

import (
	"context"
	"math"
	"sort"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard/switchboard/gen/switchboard/registry/v1"
	"github.com/switchboard/switchboard/services/registry/internal/store"
)

// Name is the service's name in `switchboard serve` and in logs.
const Name = "registry"

// Health statuses reported by GetHealth (the seed's vocabulary).
const (
	StatusHealthy   = "healthy"
	StatusUnhealthy = "unhealthy"
)

// Options are what the registry needs to know about its own node.
type Options struct {
	NodeID string
	// Ready reports whether this node's dependencies are up (readiness).
	Ready func() bool
}

// Server implements registryv1.RegistryServiceServer. Membership itself
// (registration, heartbeats, sweeps) and WatchNodes arrive with the registry
// issue; until then WatchNodes answers UNIMPLEMENTED and the reads below show
// whatever node_registry holds.
type Server struct {
	registryv1.UnimplementedRegistryServiceServer

	log   *zap.Logger
	store *store.Store
	opts  Options
}

// New returns the registry service over pool.
func New(log *zap.Logger, pool *pgxpool.Pool, opts Options) *Server {
	return &Server{log: log, store: store.New(pool), opts: opts}
}

// Desc is the gRPC service descriptor Server implements.
func (s *Server) Desc() *grpc.ServiceDesc { return &registryv1.RegistryService_ServiceDesc }

// ListNodes implements registryv1.RegistryServiceServer.
func (s *Server) ListNodes(ctx context.Context, _ *registryv1.ListNodesRequest) (*registryv1.ListNodesResponse, error) {
	nodes, err := s.store.List(ctx)
	if err != nil {
		return nil, err
	}
	resp := &registryv1.ListNodesResponse{Data: make([]*registryv1.Node, 0, len(nodes))}
	for _, n := range nodes {
		pb, err := toProto(n)
		if err != nil {
			return nil, err
		}
		resp.Data = append(resp.Data, pb)
	}
	return resp, nil
}

// GetHealth implements registryv1.RegistryServiceServer. It never fails for a
// database problem: that is what status "unhealthy" reports.
func (s *Server) GetHealth(ctx context.Context, _ *registryv1.GetHealthRequest) (*registryv1.GetHealthResponse, error) {
	resp := &registryv1.GetHealthResponse{
		Status:  StatusUnhealthy,
		NodeId:  s.opts.NodeID,
		Cluster: &registryv1.ClusterHealth{Peers: []string{}},
	}
	nodes, err := s.store.List(ctx)
	if err != nil {
		s.log.Warn("health: cannot read node_registry", zap.Error(err))
		return resp, nil
	}
	clock, err := s.store.Clock(ctx, s.opts.NodeID)
	if err != nil {
		s.log.Warn("health: cannot read the database clock", zap.Error(err))
		return resp, nil
	}
	resp.Cluster.Size = int32(min(len(nodes), math.MaxInt32))
	for _, n := range nodes {
		if n.NodeID != s.opts.NodeID {
			resp.Cluster.Peers = append(resp.Cluster.Peers, n.NodeID)
		}
	}
	resp.Cluster.HeartbeatAgeMs = int32(min(clock.HeartbeatAge/time.Millisecond, math.MaxInt32))
	if s.opts.Ready == nil || s.opts.Ready() {
		resp.Status = StatusHealthy
	}
	return resp, nil
}

func toProto(n store.Node) (*registryv1.Node, error) {
	stats, err := structpb.NewStruct(n.Stats)
	if err != nil {
		return nil, err
	}
	return &registryv1.Node{
		NodeId:       n.NodeID,
		Endpoint:     n.Endpoint,
		Seq:          n.Seq,
		RegisteredAt: timestamppb.New(n.RegisteredAt),
		Heartbeat:    timestamppb.New(n.Heartbeat),
		Stats:        stats,
		Services:     servicesOf(n.Stats),
	}, nil
}

// servicesOf reads the "services" list a node publishes in its stats.
func servicesOf(stats map[string]any) []string {
	raw, _ := stats["services"].([]any)
	out := make([]string, 0, len(raw))
	for _, v := range raw {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
