//go:build chaos

package chaos

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Stale scenario sizes: 6,000 todos at 1,000/s, six workers.
const (
	staleTodos    = 6_000
	staleBatch    = 100
	staleInterval = 100 * time.Millisecond
	staleWorkers  = 6
)

// TestChaosStaleNode: a node is paused (SIGSTOP) under load until its peers
// sweep it from the registry, then resumed (SIGCONT). Whatever it held —
// claims it had committed but not answered, acks in flight, locks of open
// statements — must cost no todo and complete none twice; the workers go on
// through the other two nodes; and the node recovers: the registry's design
// is that a node a peer swept exits non-zero and its restart re-registers it,
// so the test restarts it as its supervisor would (or, if it re-registered
// in place, just waits), and it must end healthy in a three-node cluster.
func TestChaosStaleNode(t *testing.T) { //nolint:paralleltest // one at a time: TestChaosMain crash-restarts the Postgres every scenario shares
	began := time.Now()
	c := newCluster(t, "chaos_stale")
	ws := c.workers(t, staleWorkers)
	ctx := t.Context()
	p := c.produce(ctx, "stale", staleTodos, staleBatch, staleInterval)
	a, b := c.nodes[0], c.nodes[1]

	time.Sleep(1500 * time.Millisecond) // the fault schedule: load first
	stopped := time.Now()
	b.signal(syscall.SIGSTOP)
	swept := false
	for time.Since(stopped) < 30*time.Second && !swept {
		h, _ := a.healthBody(ctx)
		swept = h.Status != "" && !slices.Contains(h.Cluster.Peers, b.id)
		time.Sleep(20 * time.Millisecond) // polling a condition, under the deadline above
	}
	require.True(t, swept, "node-a never swept the paused node-b")
	sweptAfter := time.Since(stopped)
	// Stay paused a little past the sweep, as a stalled VM would.
	time.Sleep(heartbeatInterval)
	resumed := time.Now()
	b.signal(syscall.SIGCONT)

	recovery := ""
	deadline := time.Now().Add(30 * time.Second)
	for recovery == "" && time.Now().Before(deadline) {
		if !b.alive() {
			recovery = fmt.Sprintf("exited with code %d %s after SIGCONT (a peer swept it); restarted", b.code, time.Since(resumed).Round(time.Millisecond))
			b.start(t)
			break
		}
		if h, code := b.healthBody(ctx); h.Status == "healthy" && code == 200 && len(h.Cluster.Peers) == 2 {
			recovery = fmt.Sprintf("re-registered in place, healthy %s after SIGCONT", time.Since(resumed).Round(time.Millisecond))
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, under the deadline above
	}
	require.NotEmpty(t, recovery, "node-b neither exited nor recovered within 30 s of SIGCONT:\n%s", tail(b.logPath, 30))
	b.waitHealthy(t, 60*time.Second)
	healthyAfter := time.Since(resumed)
	for _, n := range c.nodes {
		want := []string{}
		for _, o := range c.nodes {
			if o != n {
				want = append(want, o.id)
			}
		}
		ok := false
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end) && !ok; {
			h, _ := n.healthBody(ctx)
			slices.Sort(h.Cluster.Peers)
			ok = h.Status == "healthy" && slices.Equal(h.Cluster.Peers, want)
			time.Sleep(20 * time.Millisecond) // polling a condition, under the deadline above
		}
		require.True(t, ok, "node %s does not see %v as its healthy peers", n.id, want)
	}

	confirmed := p.wait(t, 5*time.Minute)
	c.waitDrained(t, staleTodos, 5*time.Minute)
	for _, w := range ws {
		w.stop(t, 30*time.Second)
	}
	counts, err := countQueue(ctx, c.db, queueName)
	require.NoError(t, err)
	sdk, err := tallyWorkers(ws)
	require.NoError(t, err)
	stall, err := longestStall(ctx, c.db, queueName, stopped, resumed.Add(3*time.Second))
	require.NoError(t, err)

	r := row{
		scenario: "stale", todos: confirmed, lost: confirmed - counts.completed, double: counts.doubles,
		sdkDouble: sdk.doubles, redelivered: counts.redelivered, extraAttempts: counts.extraAttempts,
		retried: sdk.retried, abandoned: sdk.abandoned, leaseLost: sdk.outcomes["lease_lost"], took: time.Since(began),
	}
	r.events = append(r.events,
		fmt.Sprintf("node %s SIGSTOP: swept by its peers after %s (threshold %s), SIGCONT after %s; longest stall from SIGSTOP to 3 s after SIGCONT %s",
			b.id, sweptAfter.Round(time.Millisecond), staleThreshold, resumed.Sub(stopped).Round(time.Millisecond), stall.Round(time.Millisecond)),
		fmt.Sprintf("node %s %s; healthy %s after SIGCONT", b.id, recovery, healthyAfter.Round(time.Millisecond)))
	r.notes = append(r.notes,
		fmt.Sprintf("sdk: %d runs (%d stopped gracefully), outcomes %s; acks retried %d, recovered %d, already %d, abandoned %d; claim errors %d",
			sdk.runs, sdk.finals, outcomeList(sdk.outcomes), sdk.retried, sdk.recovered, sdk.already, sdk.abandoned, sdk.claimErrors),
		fmt.Sprintf("db: %d rows, %d completed, %d dead, %d completions recorded", counts.rows, counts.completed, counts.dead, counts.completions),
		p.note())
	addRow(t, r)

	require.EqualValues(t, staleTodos, confirmed, "every enqueue confirmed")
	require.EqualValues(t, staleTodos, counts.rows, "one row per dedupe key")
	require.Zero(t, r.lost, "lost todos:\n%s", notCompleted(ctx, c.db, queueName))
	require.Zero(t, counts.dead, "dead todos")
	require.Zero(t, r.double, "todos completed twice (database)")
	require.Zero(t, r.sdkDouble, "todos two OnAcks reported Completed")
	require.Zero(t, r.abandoned, "acks the SDK gave up: %q", sdk.unconfirmed)
	for _, n := range c.nodes {
		require.True(t, n.alive(), "node %s exited (code %d):\n%s", n.id, n.code, tail(n.logPath, 30))
	}
}
