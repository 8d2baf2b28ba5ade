//go:build integration

package mesh_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A peer that stops and comes back on the same address (a restart) is
// redialed, and events broadcast after it is back reach it.
func TestRestartedPeerIsRedialed(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a := tb.startNode(t, "node-a", nodeConfig{})
	b := tb.startNode(t, "node-b", nodeConfig{})
	waitPeers(t, a, "node-b")

	b.stop(t)
	waitPeers(t, a) // the broken link is noticed while idle

	b2 := tb.startNode(t, "node-b", nodeConfig{addr: b.addr})
	require.Eventually(t, func() bool {
		a.mesh.Broadcast(event("after-restart", 1))
		return len(b2.inbox.on("after-restart")) > 0
	}, waitFor, 10*time.Millisecond)
	waitPeers(t, a, "node-b")
}

// A peer that comes back at a new endpoint (its row changed) is dialed
// there: the link to the old address is dropped, not waited on.
func TestMovedPeerIsDialedAtItsNewEndpoint(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a := tb.startNode(t, "node-a", nodeConfig{})
	b := tb.startNode(t, "node-b", nodeConfig{})
	waitPeers(t, a, "node-b")

	b.stop(t)
	b2 := tb.startNode(t, "node-b", nodeConfig{}) // a fresh port; the row is updated
	require.NotEqual(t, b.addr, b2.addr)
	require.Eventually(t, func() bool {
		a.mesh.Broadcast(event("after-move", 1))
		return len(b2.inbox.on("after-move")) > 0
	}, waitFor, 10*time.Millisecond)
}

// A peer that stops reading fills its queue, and then Broadcast drops for
// that peer (counting it) instead of blocking; other peers still get events.
func TestFullPeerQueueDropsInsteadOfBlocking(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	gate := make(chan struct{})
	a := tb.startNode(t, "node-a", nodeConfig{queueSize: 8})
	tb.startNode(t, "node-stuck", nodeConfig{gate: gate})
	c := tb.startNode(t, "node-c", nodeConfig{})
	t.Cleanup(func() { close(gate) }) // runs before the nodes stop
	waitPeers(t, a, "node-c", "node-stuck")

	// The stuck peer's Deliver never returns, so its link stops reading;
	// once the transport's flow-control window is full, A's sender blocks in
	// Send and A's queue for it fills. Broadcast must keep returning.
	big := event("flood", 0)
	big.Payload = json.RawMessage(`{"p":"` + strings.Repeat("a", 4<<10) + `"}`)
	require.Eventually(t, func() bool {
		for range 100 {
			a.mesh.Broadcast(big)
		}
		return a.mesh.Stats().Dropped > 0
	}, waitFor, time.Millisecond)

	require.Eventually(t, func() bool {
		a.mesh.Broadcast(event("still-flowing", 1))
		return len(c.inbox.on("still-flowing")) > 0
	}, waitFor, 10*time.Millisecond, "the healthy peer is not held up by the stuck one")
}
