//go:build chaos

package chaos

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Main scenario sizes: 20,000 todos enqueued at 1,000/s while six workers
// drain them, with the faults spread over the 20 s of load.
const (
	mainTodos    = 20_000
	mainBatch    = 250
	mainInterval = 250 * time.Millisecond
	mainWorkers  = 6
	// resumeLimit is the longest Postgres may be back without a completion.
	resumeLimit = 2 * time.Second
)

// fault is one fault of a scenario and the window in which to look for the
// stall it caused.
type fault struct {
	name     string
	at, upTo time.Time
}

// TestChaosMain: workers SIGKILLed every 2.5 s (and restarted, as a
// supervisor would), a node SIGKILLed and restarted 5 s later (the workers
// fail over to the other two), and Postgres crash-restarted, all under load.
// Every todo must complete exactly once, every node must be alive and
// healthy after the Postgres restart, completions must resume within 2 s of
// Postgres accepting connections, and the SDK must give up no ack.
func TestChaosMain(t *testing.T) { //nolint:paralleltest // one at a time: TestChaosMain crash-restarts the Postgres every scenario shares
	began := time.Now()
	c := newCluster(t, "chaos_main")
	ws := c.workers(t, mainWorkers)
	ctx := t.Context()
	p := c.produce(ctx, "main", mainTodos, mainBatch, mainInterval)
	start := time.Now()

	var faults []fault
	var pgDown, pgUp time.Time
	kills := 0
	killWorker := func() {
		w := ws[kills%len(ws)]
		kills++
		at := time.Now()
		w.restart(t)
		faults = append(faults, fault{name: "worker " + w.name + " SIGKILL", at: at, upTo: at.Add(2 * time.Second)})
	}
	victim := c.nodes[2]
	schedule := []struct {
		at time.Duration
		do func()
	}{
		{2 * time.Second, killWorker},
		{4500 * time.Millisecond, killWorker},
		{6 * time.Second, func() {
			at := time.Now()
			victim.signal(syscall.SIGKILL)
			require.True(t, victim.wait(10*time.Second), "node %s survived SIGKILL", victim.id)
			faults = append(faults, fault{name: "node " + victim.id + " SIGKILL", at: at, upTo: at.Add(5 * time.Second)})
		}},
		{7 * time.Second, killWorker},
		{9500 * time.Millisecond, killWorker},
		{11 * time.Second, func() {
			victim.start(t)
			took := victim.waitHealthy(t, 60*time.Second)
			t.Logf("node %s restarted, healthy after %s", victim.id, took.Round(time.Millisecond))
		}},
		{12 * time.Second, killWorker},
		{15 * time.Second, func() {
			var err error
			pgDown, pgUp, err = pg.crashRestart(ctx)
			require.NoError(t, err)
			t.Logf("postgres crash-restarted: accepting %s after the stop began", pgUp.Sub(pgDown).Round(time.Millisecond))
			// An outage the leases cannot outlast makes abandoned acks the
			// right answer (the todos run again): that is a test setting
			// to change, not a fault of the SDK, so say so plainly.
			require.Less(t, pgUp.Sub(pgDown), workerLease*time.Second*2/3,
				"the Postgres outage outlasted what the workers' leases surely cover; raise workerLease")
			for _, n := range c.nodes {
				n.waitHealthy(t, 20*time.Second) //nolint:contextcheck // it polls under t.Context()
				t.Logf("node %s healthy by %s after postgres accepted", n.id, time.Since(pgUp).Round(time.Millisecond))
			}
		}},
		{17500 * time.Millisecond, killWorker},
		{20 * time.Second, killWorker},
		{22500 * time.Millisecond, killWorker},
	}
	for _, s := range schedule {
		if d := time.Until(start.Add(s.at)); d > 0 {
			time.Sleep(d) // the fault schedule, not a synchronization
		}
		s.do()
	}

	confirmed := p.wait(t, 5*time.Minute)
	counts := c.waitDrained(t, mainTodos, 8*time.Minute-time.Since(began))
	for _, w := range ws {
		w.stop(t, 30*time.Second)
	}
	counts, err := countQueue(ctx, c.db, queueName)
	require.NoError(t, err)
	sdk, err := tallyWorkers(ws)
	require.NoError(t, err)

	r := row{
		scenario: "main", todos: confirmed, lost: confirmed - counts.completed, double: counts.doubles,
		sdkDouble: sdk.doubles, redelivered: counts.redelivered, extraAttempts: counts.extraAttempts,
		retried: sdk.retried, abandoned: sdk.abandoned, leaseLost: sdk.outcomes["lease_lost"], took: time.Since(began),
	}
	resume, err := firstCompletionAfter(ctx, c.db, queueName, pgUp)
	require.NoError(t, err)
	pgStall, err := longestStall(ctx, c.db, queueName, pgDown, pgUp.Add(5*time.Second))
	require.NoError(t, err)
	r.events = append(r.events, fmt.Sprintf("postgres crash-restart: down %s, first completion %s after it accepted connections (limit %s), longest stall %s",
		pgUp.Sub(pgDown).Round(time.Millisecond), resume.Round(time.Millisecond), resumeLimit, pgStall.Round(time.Millisecond)))
	var worstKill time.Duration
	for _, f := range faults {
		stall, err := longestStall(ctx, c.db, queueName, f.at, f.upTo)
		require.NoError(t, err)
		if strings.HasPrefix(f.name, "node") {
			r.events = append(r.events, fmt.Sprintf("%s: longest stall %s in the %s after it", f.name, stall.Round(time.Millisecond), f.upTo.Sub(f.at)))
		} else {
			worstKill = max(worstKill, stall)
		}
	}
	r.events = append(r.events, fmt.Sprintf("%d worker SIGKILLs: longest stall after one %s", kills, worstKill.Round(time.Millisecond)))
	r.notes = append(r.notes,
		fmt.Sprintf("sdk: %d runs (%d stopped gracefully), outcomes %s; acks retried %d, recovered %d, already %d, abandoned %d; claim errors %d",
			sdk.runs, sdk.finals, outcomeList(sdk.outcomes), sdk.retried, sdk.recovered, sdk.already, sdk.abandoned, sdk.claimErrors),
		fmt.Sprintf("db: %d rows, %d completed, %d dead, %d completions recorded", counts.rows, counts.completed, counts.dead, counts.completions),
		p.note())
	addRow(t, r)

	require.EqualValues(t, mainTodos, confirmed, "every enqueue confirmed")
	require.EqualValues(t, mainTodos, counts.rows, "one row per dedupe key")
	require.Zero(t, r.lost, "lost todos:\n%s", notCompleted(ctx, c.db, queueName))
	require.Zero(t, counts.dead, "dead todos:\n%s", notCompleted(ctx, c.db, queueName))
	require.Zero(t, r.double, "todos completed twice (database)")
	require.Zero(t, r.sdkDouble, "todos two OnAcks reported Completed")
	require.Zero(t, r.abandoned, "acks the SDK gave up: %q", sdk.unconfirmed)
	require.LessOrEqual(t, resume, resumeLimit, "completions resumed too late after postgres came back")
	require.GreaterOrEqual(t, resume, time.Duration(0), "no completion after postgres came back")
	for _, n := range c.nodes {
		require.True(t, n.alive(), "node %s exited (code %d):\n%s", n.id, n.code, tail(n.logPath, 30))
		n.waitHealthy(t, 10*time.Second)
	}
}
