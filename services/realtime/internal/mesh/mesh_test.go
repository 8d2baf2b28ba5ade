//go:build integration

package mesh_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/realtime/internal/mesh"
	"github.com/switchboard/switchboard/services/realtime/internal/wire"
)

// Three nodes: an event A broadcasts reaches B and C once each and never
// comes back to A, with every field intact.
func TestBroadcastReachesEveryPeerExactlyOnce(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a := tb.startNode(t, "node-a", nodeConfig{})
	b := tb.startNode(t, "node-b", nodeConfig{})
	c := tb.startNode(t, "node-c", nodeConfig{})
	waitPeers(t, a, "node-b", "node-c")
	waitPeers(t, b, "node-a", "node-c")
	waitPeers(t, c, "node-a", "node-b")

	want := event("doc:42", 1)
	want.Origin = "someone-else" // the mesh stamps its own node id
	a.mesh.Broadcast(want)
	require.Eventually(t, func() bool {
		return len(b.inbox.from("node-a")) == 1 && len(c.inbox.from("node-a")) == 1
	}, waitFor, 5*time.Millisecond)

	// Fences: links are FIFO, so anything B or C might have sent on after
	// receiving A's event would reach its peers before their fence does.
	b.mesh.Broadcast(event("fence", 2))
	c.mesh.Broadcast(event("fence", 3))
	require.Eventually(t, func() bool {
		return len(a.inbox.on("fence")) == 2 && len(b.inbox.from("node-c")) == 1 && len(c.inbox.from("node-b")) == 1
	}, waitFor, 5*time.Millisecond)

	require.Empty(t, a.inbox.on("doc:42"), "A's own event came back to it")
	require.Len(t, a.inbox.on("fence"), 2, "A got only the fences")
	for _, n := range []*node{b, c} {
		require.Len(t, n.inbox.on("doc:42"), 1, "%s: A's event exactly once", n.id)
		require.Len(t, n.inbox.on("fence"), 1, "%s: only the other's fence", n.id)
		got := n.inbox.from("node-a")
		require.Len(t, got, 1, n.id)
		requireSameEvent(t, want, got[0])
		require.Equal(t, "node-a", got[0].Origin)
	}
	require.Eventually(t, func() bool {
		s := a.mesh.Stats()
		return s.Sent == 2 && s.Received == 2 && s.Dropped == 0 && s.Peers == 2
	}, waitFor, 5*time.Millisecond, "A's stats: %+v", a.mesh.Stats())
}

func requireSameEvent(t *testing.T, want, got wire.Ephemeral) {
	t.Helper()
	require.Equal(t, want.HumanID, got.HumanID)
	require.Equal(t, want.Channel, got.Channel)
	require.Equal(t, want.Kind, got.Kind)
	require.JSONEq(t, string(want.Payload), string(got.Payload))
	require.Equal(t, want.PublishedBy, got.PublishedBy)
	require.True(t, want.CreatedAt.Equal(got.CreatedAt), "created_at %v, want %v", got.CreatedAt, want.CreatedAt)
}

// Links follow node_registry: a row that goes away (the node left or was
// swept) loses its links, a new row gets them.
func TestLinksFollowTheRegistry(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a := tb.startNode(t, "node-a", nodeConfig{})
	b := tb.startNode(t, "node-b", nodeConfig{})
	tb.startNode(t, "node-c", nodeConfig{})
	waitPeers(t, a, "node-b", "node-c")
	waitPeers(t, b, "node-a", "node-c")

	tb.deregister(t, "node-c")
	waitPeers(t, a, "node-b")
	waitPeers(t, b, "node-a")

	d := tb.startNode(t, "node-d", nodeConfig{})
	waitPeers(t, a, "node-b", "node-d")
	waitPeers(t, b, "node-a", "node-d")
	waitPeers(t, d, "node-a", "node-b")

	// And the new links carry events.
	require.Eventually(t, func() bool {
		a.mesh.Broadcast(event("hello-d", 1))
		return len(d.inbox.on("hello-d")) > 0
	}, waitFor, 10*time.Millisecond)
}

// New refuses a mesh that could not work; Stop is safe before Start and
// twice, and a stopped mesh does not start again.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	deliver := func(wire.Ephemeral) {}
	valid := mesh.Options{NodeID: "n", Secret: secret, Pool: tb.pool, Deliver: deliver}

	for name, mutate := range map[string]func(*mesh.Options){
		"no node id":    func(o *mesh.Options) { o.NodeID = "" },
		"short secret":  func(o *mesh.Options) { o.Secret = secret[:mesh.MinSecretLen-1] },
		"binary secret": func(o *mesh.Options) { o.Secret = append([]byte{0}, secret...) },
		"no pool":       func(o *mesh.Options) { o.Pool = nil },
		"no deliver":    func(o *mesh.Options) { o.Deliver = nil },
	} {
		o := valid
		mutate(&o)
		_, err := mesh.New(o)
		require.Error(t, err, name)
	}

	m, err := mesh.New(valid)
	require.NoError(t, err)
	require.NoError(t, m.Stop(t.Context()), "stop before start")
	require.NoError(t, m.Stop(t.Context()), "second stop")
	require.Error(t, m.Start(t.Context()), "start after stop")

	m, err = mesh.New(valid)
	require.NoError(t, err)
	require.NoError(t, m.Start(t.Context()))
	require.NoError(t, m.Start(t.Context()), "second start is a no-op")
	m.Broadcast(event("nobody", 1)) // no peers: nothing to do, nothing dropped
	require.NoError(t, m.Stop(t.Context()))
	require.NoError(t, m.Stop(t.Context()))
	require.Equal(t, mesh.Stats{}, m.Stats())
	require.Equal(t, "realtime-mesh", m.Name())
}
