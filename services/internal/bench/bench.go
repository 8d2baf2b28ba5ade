// Package bench implements the load generators behind `switchboard bench
// queue|ingest|realtime`: each parses its own flags, runs against nodes
// that are already serving, logs progress to stderr and prints one RESULT
// line on stdout. The cli package dispatches to Queue, Ingest and Realtime;
// a *UsageError means a mistake on the command line (exit code 2).
//
// The benchmarks run on the same machine as the nodes and their database,
// so they are written to cost little CPU per operation (ingest_conn.go,
// realtime_wire.go say how).
package bench

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"sync"
	"time"
)

// EnvToken is the bearer token `switchboard bench` sends. queue and realtime
// need an agent credential (AdminService.MintCredential with agent_id set and
// scopes ["agent"]: an agent may enqueue, claim and ack); ingest an admin one.
// With the read scope too, the queue benchmark first checks that the queue is
// empty.
const EnvToken = "SWITCHBOARD_TOKEN"

// UsageError is a mistake in a benchmark's command line; the switchboard
// command exits 2 on it, as on its own usage errors.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

func usageErr(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...) + " (see `switchboard help`)"}
}

// Help is what a benchmark returns when asked for --help (or -h): not a
// failure; the caller prints Synopsis and the flag set's defaults and exits 0.
type Help struct {
	Synopsis string
	Flags    *flag.FlagSet
}

func (h *Help) Error() string { return "help requested" }

// flagErr turns a flag set's parse error into Help or a usage error.
func flagErr(fs *flag.FlagSet, synopsis string, err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return &Help{Synopsis: synopsis, Flags: fs}
	}
	return usageErr("%s: %v", fs.Name(), err)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// percentile returns the nearest-rank p-th percentile (0 < p ≤ 100) of
// sorted (ascending): the smallest value with at least p% of the values at or
// below it. It returns 0 for no values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// progress prints line() to stderr once a second until the returned stop is
// called.
func (b *bench) progress(line func() string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintln(b.stderr, line())
			}
		}
	})
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}
