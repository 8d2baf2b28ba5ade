//go:build e2e

package e2etest

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Registry settings of the nodes StartNode runs: heartbeats fast enough for
// tests; a threshold of 15 missed heartbeats (the defaults allow 3: 10s /
// 30s) so a node that a loaded machine starves for a second is not swept as
// dead, which would fail the tests that wait for a live cluster. The tests
// that kill or stop a node wait for the sweep (a condition), so only their
// duration depends on it.
const (
	HeartbeatInterval = 200 * time.Millisecond
	StaleThreshold    = 3 * time.Second
)

// Node is a `serve all` process and the addresses it listens on.
type Node struct {
	*Process
	ID, GRPC, HTTP string
}

// StartNode starts `serve all` as node id on db with extraEnv and waits
// until its gRPC health check reports SERVING.
func StartNode(t *testing.T, db, id string, extraEnv ...string) *Node {
	t.Helper()
	p := Start(t, append(append(BaseEnv(db),
		"CLUSTER_NODE_ID="+id,
		"CLUSTER_HEARTBEAT_INTERVAL="+HeartbeatInterval.String(),
		"CLUSTER_STALE_THRESHOLD="+StaleThreshold.String(),
	), extraEnv...), "serve", "all")
	n := &Node{Process: p, ID: id}
	n.GRPC, _ = p.WaitField(t, "gRPC listening", "addr").(string)
	n.HTTP, _ = p.WaitField(t, "HTTP listening", "addr").(string)
	WaitServing(t, n.GRPC)
	return n
}

// WaitServing waits until the plaintext gRPC server at addr reports SERVING.
func WaitServing(t *testing.T, addr string) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	require.Eventually(t, func() bool {
		resp, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{})
		return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
	}, 60*time.Second, 20*time.Millisecond, "%s never reported SERVING", addr)
}

// HealthBody is a node's GET /health.
type HealthBody struct {
	Status  string `json:"status"`
	NodeID  string `json:"node_id"`
	Cluster struct {
		Size           int      `json:"size"`
		Peers          []string `json:"peers"`
		HeartbeatAgeMs int      `json:"heartbeat_age_ms"`
	} `json:"cluster"`
}

// GetJSON fetches url as the administrator into v and returns the HTTP
// status (0 if unreachable or not JSON).
func GetJSON(t *testing.T, url string, v any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+AdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return 0
	}
	return resp.StatusCode
}

// Health is n's GET /health (zero when unreachable).
func (n *Node) Health(t *testing.T) HealthBody {
	t.Helper()
	var h HealthBody
	GetJSON(t, "http://"+n.HTTP+"/health", &h)
	return h
}

// Members is the node ids in n's /api/admin/cluster, in seq order.
func (n *Node) Members(t *testing.T) []string {
	t.Helper()
	var body struct {
		Data []struct {
			NodeID string `json:"node_id"`
		} `json:"data"`
	}
	if GetJSON(t, "http://"+n.HTTP+"/api/admin/cluster", &body) != http.StatusOK {
		return nil
	}
	ids := []string{}
	for _, d := range body.Data {
		ids = append(ids, d.NodeID)
	}
	return ids
}

// WaitMembers waits until n sees exactly want (in any order) and returns
// how long that took.
func (n *Node) WaitMembers(t *testing.T, want ...string) time.Duration {
	t.Helper()
	began := time.Now()
	var got []string
	require.Eventually(t, func() bool {
		got = n.Members(t)
		return slices.Equal(Sorted(got), Sorted(want))
	}, 30*time.Second, 20*time.Millisecond, "%s sees %v, want %v", n.ID, got, want)
	return time.Since(began)
}

// Sorted is a sorted copy of s.
func Sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
