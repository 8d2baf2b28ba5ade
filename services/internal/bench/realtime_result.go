package bench

// The outcome of a `bench realtime` run: adding up the subscriptions'
// tallies, the RESULT line, and what makes the run fail.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// rtResult is one run's outcome.
type rtResult struct {
	deliveredPerSec float64
	p50, p90, p99   time.Duration
	max             time.Duration
	samples         int

	published   int   // events Publish acknowledged (warmup included)
	publishErrs int   // Publish calls that failed
	deliveries  int64 // first deliveries, all subscribers, warmup included
	lost, dups  int64 // of acknowledged events, summed over subscribers
	outOfOrder  int64 // durable events whose id was not above the previous one
	resumes     int   // subscriptions resumed after the node ended them
	malformed   int64 // events of this run whose payload could not be read
	streamErrs  []error
	durable     bool
}

func (r rtResult) line() string {
	return fmt.Sprintf("RESULT delivered_per_s=%.0f p50_ms=%.3f p99_ms=%.3f", r.deliveredPerSec, ms(r.p50), ms(r.p99))
}

// failure is the error a run ends with despite having figures: for durable
// events, any loss or duplicate; for both kinds, Publish errors and broken
// streams.
func (r rtResult) failure() error {
	var errs []error
	if r.durable && (r.lost > 0 || r.dups > 0) {
		errs = append(errs, fmt.Errorf("bench realtime: durable events must reach every subscriber exactly once: %d deliveries lost, %d duplicated", r.lost, r.dups))
	}
	if r.publishErrs > 0 {
		errs = append(errs, fmt.Errorf("bench realtime: %d Publish calls failed", r.publishErrs))
	}
	if n := len(r.streamErrs); n > 0 {
		errs = append(errs, fmt.Errorf("bench realtime: %d subscriptions broke; first: %w", n, r.streamErrs[0]))
	}
	return errors.Join(errs...)
}

// result adds the subscriptions' tallies up and logs the details.
func (b *rtBench) result(measureFrom, stop time.Time) (rtResult, error) {
	res := rtResult{durable: !b.cfg.ephemeral}
	pubs := make([]rtPublished, len(b.pubs))
	measuredPubs, late := 0, 0
	var firstPubErr error
	var calls []time.Duration
	for i, p := range b.pubs {
		calls = append(calls, p.callLat...)
		pubs[i] = p.out
		res.published += p.out.ok()
		res.publishErrs += len(p.out.failed)
		measuredPubs += p.measured
		late += p.late
		if firstPubErr == nil {
			firstPubErr = p.firstErr
		}
	}
	var measured int64
	lastNs := stop.UnixNano()
	byAddr := map[string][][]time.Duration{}
	var others, messages, events int64
	var lastResumeErr error
	for _, s := range b.subs {
		res.resumes += s.resumes
		if s.resumeErr != nil {
			lastResumeErr = s.resumeErr
		}
		t := s.tally
		res.deliveries += t.distinct
		res.dups += t.dups
		res.lost += t.lost(pubs)
		res.outOfOrder += s.outOfOrder
		res.malformed += s.malformed
		others += s.others
		messages += s.messages
		events += s.events
		measured += t.measured
		lastNs = max(lastNs, t.lastMeasuredNs)
		byAddr[s.addr] = append(byAddr[s.addr], t.lat)
		if err := s.failed(); err != nil {
			res.streamErrs = append(res.streamErrs, err)
		}
	}
	window := time.Duration(lastNs - measureFrom.UnixNano())
	fmt.Fprintf(b.stderr, "bench: published %d events (%d in the window: %.0f/s of the %d/s asked; %d slots started late), %d Publish errors\n",
		res.published, measuredPubs, float64(measuredPubs)/stop.Sub(measureFrom).Seconds(), b.cfg.rate, late, res.publishErrs)
	if len(calls) > 0 {
		slices.Sort(calls)
		fmt.Fprintf(b.stderr, "bench: Publish round trip in the window: p50 %.3f ms, p99 %.3f ms, max %.3f ms (one call at a time per publisher: %d publishers top out near %.0f/s)\n",
			ms(percentile(calls, 50)), ms(percentile(calls, 99)), ms(calls[len(calls)-1]), len(b.pubs), float64(len(b.pubs))*float64(time.Second)/float64(percentile(calls, 50)))
	}
	if firstPubErr != nil {
		fmt.Fprintf(b.stderr, "bench: first Publish error: %v\n", firstPubErr)
	}
	if measured == 0 {
		return res, errors.Join(errors.New("bench realtime: no event sent in the measured window was delivered"), res.failure())
	}
	all := make([]time.Duration, 0, measured)
	for _, s := range b.subs {
		all = append(all, s.tally.lat...)
	}
	slices.Sort(all)
	res.samples = len(all)
	res.deliveredPerSec = float64(measured) / window.Seconds()
	res.p50, res.p90, res.p99, res.max = percentile(all, 50), percentile(all, 90), percentile(all, 99), all[len(all)-1]
	fmt.Fprintf(b.stderr, "bench: %d deliveries of events sent in the window over %s: %.0f/s; publish→deliver p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms\n",
		measured, window.Round(time.Millisecond), res.deliveredPerSec, ms(res.p50), ms(res.p90), ms(res.p99), ms(res.max))
	for _, addr := range slices.Sorted(maps.Keys(byAddr)) {
		lat := slices.Concat(byAddr[addr]...)
		slices.Sort(lat)
		fmt.Fprintf(b.stderr, "bench:   subscribers on %s: %d deliveries, p50 %.3f ms, p99 %.3f ms\n",
			addr, len(lat), ms(percentile(lat, 50)), ms(percentile(lat, 99)))
	}
	kind := map[bool]string{false: "ephemeral (best effort)", true: "durable"}[res.durable]
	fmt.Fprintf(b.stderr, "bench: %d stream messages carried %d events (%.2f per message, --max-batch %d)\n",
		messages, events, float64(events)/float64(max(messages, 1)), b.cfg.maxBatch)
	fmt.Fprintf(b.stderr, "bench: %s events: %d of %d expected deliveries arrived, %d lost, %d duplicated, %d out of id order, %d malformed; %d other events on the channel ignored\n",
		kind, res.deliveries, int64(res.published)*int64(len(b.subs)), res.lost, res.dups, res.outOfOrder, res.malformed, others)
	if res.resumes > 0 {
		fmt.Fprintf(b.stderr, "bench: %d subscriptions were ended by their node and resumed with after_id; the last because: %v\n", res.resumes, lastResumeErr)
	}
	return res, nil
}
