package queue

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/apierr"
)

// TestShortestGapFromTheFields: the closest two ticks of each grammar,
// across minutes, hours, days and months; a spec that fires at most once a
// day on days never next to each other, or never, is noGap.
func TestShortestGapFromTheFields(t *testing.T) {
	t.Parallel()
	for expr, want := range map[string]time.Duration{
		"* * * * * *":       time.Second,
		"*/10 * * * * *":    10 * time.Second,
		"0,50 * * * * *":    10 * time.Second, // :50 to the next minute's :00
		"*/7 * * * * *":     4 * time.Second,  // :56 to :00
		"* * * * *":         time.Minute,
		"0,59 0 * * * *":    59 * time.Second,
		"59 59 * * * *":     time.Hour,
		"0 0,45 * * * *":    15 * time.Minute, // hh:45 to the next hour's :00
		"0 0 0,23 * * *":    time.Hour,        // 23:00 to the next day's 00:00
		"0 0 0,23 1 * *":    23 * time.Hour,   // one day a month: never the next day
		"0 0 0,23 1,2 * *":  time.Hour,
		"0 0 0,23 1,31 * *": time.Hour,      // the 31st, then the 1st
		"0 0 0,23 29 2 *":   23 * time.Hour, // leap days only
		"0 12 * * 1,2":      24 * time.Hour,
		"0 12 * * 1,3":      noGap,
		"0 12 1 * 1":        24 * time.Hour, // the 1st or a Monday: a Monday the 1st, a Sunday then a Monday the 1st…
		"0 12 31 12 *":      noGap,
		"@hourly":           time.Hour,
		"@daily":            24 * time.Hour,
		"@monthly":          noGap,
		"@every 90s":        90 * time.Second,
		"@every 1ms":        time.Second, // robfig/cron runs it every second (checkInterval refuses it)
		"0 0 30 2 *":        noGap,       // never fires
	} {
		require.Equal(t, want, mustSpec(t, expr, "").shortestGap(), expr)
	}
}

// TestShortestGapMatchesTheTicks checks the field arithmetic against
// robfig/cron itself: for random expressions (a few values per time field,
// or one tick early and one late in the day; random days, months and
// weekdays) the closest two of the ticks it
// produces over eight years (two leap days) in UTC are exactly
// shortestGap's, or more than a day apart where it says noGap.
func TestShortestGapMatchesTheTicks(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(31, 8))
	// A star in a time field makes too many ticks to walk here (the table
	// covers those); the day fields take one a third of the time.
	pick := func(lo, hi, most int, star bool) string {
		if star && rng.IntN(3) == 0 {
			return "*"
		}
		var vs []string
		for range 1 + rng.IntN(most) {
			vs = append(vs, fmt.Sprint(lo+rng.IntN(hi-lo+1)))
		}
		return strings.Join(vs, ",")
	}
	from, until := utc("2001-01-01T00:00:00Z"), utc("2009-01-01T00:00:00Z")
	for i := range 60 {
		times := []string{pick(0, 59, 3, false), pick(0, 59, 2, false), pick(0, 23, 2, false)}
		if i%2 == 1 { // one tick early and one late in the day: the day boundary decides
			times = []string{pick(0, 59, 1, false), pick(0, 59, 1, false), fmt.Sprintf("%d,%d", rng.IntN(4), 20+rng.IntN(4))}
		}
		expr := strings.Join(append(times, pick(1, 31, 3, true), pick(1, 12, 4, true), pick(0, 6, 3, true)), " ")
		sp := mustSpec(t, expr, "UTC")
		walked := noGap
		prev, ok := sp.after(from.Add(-time.Second))
		for ok && prev.Before(until) {
			var next time.Time
			if next, ok = sp.after(prev); ok {
				walked = min(walked, next.Sub(prev))
				prev = next
			}
		}
		got := sp.shortestGap()
		if got == noGap {
			require.Greater(t, walked, 24*time.Hour, expr)
			continue
		}
		require.Equal(t, walked, got, expr)
	}
}

// TestSpacedFor: a spec that breaks the minimum ticks at most that often,
// each tick its own first at least the minimum after the previous
// ("@every" in multiples of its delay); one that respects it is unchanged.
func TestSpacedFor(t *testing.T) {
	t.Parallel()
	from := utc("2026-06-10T10:00:00Z")
	for _, c := range []struct {
		expr string
		want []string
	}{
		{"@every 1s", []string{"10:00:00", "10:00:10", "10:00:20", "10:00:30"}},
		{"@every 3s", []string{"10:00:00", "10:00:12", "10:00:24", "10:00:36"}},
		{"* * * * * *", []string{"10:00:00", "10:00:10", "10:00:20", "10:00:30"}},
		{"*/7 * * * * *", []string{"10:00:00", "10:00:14", "10:00:28", "10:00:42", "10:00:56", "10:01:07"}},
		{"*/15 * * * * *", []string{"10:00:00", "10:00:15", "10:00:30", "10:00:45"}}, // respects it
		{"@every 10s", []string{"10:00:00", "10:00:10", "10:00:20", "10:00:30"}},
	} {
		runs := mustSpec(t, c.expr, "").spacedFor(10*time.Second).nextRuns(from, len(c.want))
		var got []string
		for _, r := range runs {
			got = append(got, r.UTC().Format(time.TimeOnly))
		}
		require.Equal(t, c.want, got, c.expr)
	}

	// The misfire walk steps the spaced ticks, and the next tick after it
	// keeps the spacing from the one it fires.
	secs := mustSpec(t, "* * * * * *", "").spacedFor(10 * time.Second)
	p := secs.plan(from, from.Add(2*time.Minute+5*time.Second), misfireRunOnce)
	require.Equal(t, tickPlan{fire: true, at: from.Add(2 * time.Minute), next: from.Add(2*time.Minute + 10*time.Second), hasNext: true}, inUTC(p))
	every := mustSpec(t, "@every 1s", "").spacedFor(10 * time.Second)
	p = every.plan(from, from.Add(2*time.Minute+5*time.Second), misfireRunOnce)
	require.Equal(t, tickPlan{fire: true, at: from.Add(2 * time.Minute), next: from.Add(2*time.Minute + 10*time.Second), hasNext: true}, inUTC(p))
}

// TestShortestGapIsTheWallClocks: a DST change does not count. "30 2 * * *"
// in Europe/Berlin fires twice an hour apart on the fall-back day (pinned
// in TestScheduleDST) and "0 0 * * *" 23 hours apart over the
// spring-forward night, yet both are daily specs: a minimum of a day lets
// them in, and the ticker does not space them, so their DST ticks stay.
func TestShortestGapIsTheWallClocks(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{"30 2 * * *", "0 0 * * *"} {
		sp := mustSpec(t, expr, "Europe/Berlin")
		require.Equal(t, 24*time.Hour, sp.shortestGap(), expr)
		require.NoError(t, checkInterval(expr, sp, 24*time.Hour), expr)
		require.Zero(t, sp.spacedFor(24*time.Hour).spacing, expr)
	}
	sp := mustSpec(t, "30 2 * * *", "Europe/Berlin").spacedFor(24 * time.Hour)
	first, _ := sp.after(utc("2026-10-24T12:00:00Z"))
	requireRuns(t, []string{"2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z"}, sp.nextRuns(first, 2))
}

// TestCheckInterval: a spec that ticks closer than the minimum, and an
// @every that is not a positive whole number of seconds, are the cron
// field's fault, naming the minimum and its setting.
func TestCheckInterval(t *testing.T) {
	t.Parallel()
	const least = 10 * time.Second
	for expr, says := range map[string]string{
		"@every 1ms":     "at most every 10s (setting queue.schedules.min_interval_seconds)",
		"@every 0s":      "positive",
		"@every -1s":     "positive",
		"@every 9s":      "as little as 9s apart",
		"* * * * * *":    "as little as 1s apart",
		"*/5 * * * * *":  "as little as 5s apart",
		"0,55 * * * * *": "as little as 5s apart",
		"@every 10500ms": "whole seconds",
	} {
		err := checkInterval(expr, mustSpec(t, expr, ""), least)
		var ae *apierr.Error
		require.ErrorAs(t, err, &ae, expr)
		require.Len(t, ae.Violations, 1)
		require.Equal(t, "cron", ae.Violations[0].Field, expr)
		require.Contains(t, ae.Violations[0].Description, says, expr)
	}
	for _, expr := range []string{"@every 10s", "*/10 * * * * *", "0,30 * * * * *", "* * * * *", "@monthly", "0 0 30 2 *"} {
		require.NoError(t, checkInterval(expr, mustSpec(t, expr, ""), least), expr)
	}
	require.NoError(t, checkInterval("* * * * * *", mustSpec(t, "* * * * * *", ""), time.Second), "an operator may allow every second")
}
