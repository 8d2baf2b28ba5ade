// Package registry is the cluster's view of itself over gRPC and REST: the
// nodes in node_registry (GET /api/admin/cluster), this node's health and its
// view of the cluster (GET /health), and a stream of membership changes
// (WatchNodes). Membership itself — registering, heartbeats, sweeps — is
// pkg/cluster, which every process runs whatever services it serves.
package registry

import (
	"context"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard/switchboard/gen/switchboard/registry/v1"
	"github.com/switchboard/switchboard/pkg/cluster"
)

// Name is the service's name in `switchboard serve` and in logs.
const Name = "registry"

// healthQueryTimeout bounds the database reads behind GET /health, so a
// load balancer's probe gets an answer (degraded) even when Postgres hangs.
const healthQueryTimeout = time.Second

// Options are what the registry needs to know about its own node.
type Options struct {
	NodeID string
	// Status is this node's health (membership and readiness combined).
	Status func() cluster.Status
	// SinceLastHeartbeat is the local fallback for heartbeat age when the
	// database cannot be asked.
	SinceLastHeartbeat func() time.Duration
	// WatchInterval is how often WatchNodes looks for changes.
	WatchInterval time.Duration
}

// Server implements registryv1.RegistryServiceServer.
type Server struct {
	registryv1.UnimplementedRegistryServiceServer

	log   *zap.Logger
	store *cluster.Store
	opts  Options
}

// New returns the registry service over pool.
func New(log *zap.Logger, pool *pgxpool.Pool, opts Options) *Server {
	return &Server{log: log, store: cluster.NewStore(pool), opts: opts}
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

// GetHealth implements registryv1.RegistryServiceServer. A database problem
// is reported in the body (degraded), never as an RPC error, so the probe
// itself keeps working while Postgres is away.
func (s *Server) GetHealth(ctx context.Context, _ *registryv1.GetHealthRequest) (*registryv1.GetHealthResponse, error) {
	status := s.opts.Status()
	resp := &registryv1.GetHealthResponse{
		Status:  string(status),
		NodeId:  s.opts.NodeID,
		Cluster: &registryv1.ClusterHealth{Peers: []string{}},
	}
	ctx, cancel := context.WithTimeout(ctx, healthQueryTimeout)
	defer cancel()
	nodes, err := s.store.List(ctx)
	registered := false
	if err == nil {
		var age time.Duration
		age, registered, err = s.store.HeartbeatAge(ctx, s.opts.NodeID)
		resp.Cluster.HeartbeatAgeMs = millis(age)
	}
	if err != nil {
		s.log.Debug("health: database unavailable; reporting degraded", zap.Error(err))
		if status == cluster.Healthy {
			resp.Status = string(cluster.Degraded)
		}
		resp.Cluster.HeartbeatAgeMs = millis(s.opts.SinceLastHeartbeat())
		return resp, nil
	}
	// Our row is gone while our last heartbeat looks recent: a peer swept
	// us (we were paused past the stale threshold and resumed mid-tick) or
	// Postgres restarted. The next tick exits or re-registers; until then
	// this node is not a member, so it must not say healthy.
	if !registered {
		if status == cluster.Healthy {
			resp.Status = string(cluster.Degraded)
		}
		resp.Cluster.HeartbeatAgeMs = millis(s.opts.SinceLastHeartbeat())
	}
	resp.Cluster.Size = int32(min(len(nodes), math.MaxInt32))
	for _, n := range nodes {
		if n.NodeID != s.opts.NodeID {
			resp.Cluster.Peers = append(resp.Cluster.Peers, n.NodeID)
		}
	}
	return resp, nil
}

// WatchNodes implements registryv1.RegistryServiceServer.
func (s *Server) WatchNodes(_ *registryv1.WatchNodesRequest, stream grpc.ServerStreamingServer[registryv1.WatchNodesResponse]) error {
	return s.store.Watch(stream.Context(), s.opts.WatchInterval, func(e cluster.Event) error {
		msg := &registryv1.WatchNodesResponse{Type: eventType(e.Type)}
		if e.Type != cluster.Synced {
			n, err := toProto(e.Node)
			if err != nil {
				return err
			}
			msg.Node = n
		}
		return stream.Send(msg)
	})
}

func eventType(t cluster.EventType) registryv1.NodeEventType {
	switch t {
	case cluster.Joined:
		return registryv1.NodeEventType_NODE_EVENT_TYPE_JOINED
	case cluster.Synced:
		return registryv1.NodeEventType_NODE_EVENT_TYPE_SYNCED
	case cluster.Updated:
		return registryv1.NodeEventType_NODE_EVENT_TYPE_UPDATED
	case cluster.Left:
		return registryv1.NodeEventType_NODE_EVENT_TYPE_LEFT
	}
	return registryv1.NodeEventType_NODE_EVENT_TYPE_UNSPECIFIED
}

func millis(d time.Duration) int32 {
	return int32(min(max(d.Milliseconds(), 0), math.MaxInt32))
}

func toProto(n cluster.Node) (*registryv1.Node, error) {
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
		Services:     n.Services(),
	}, nil
}
