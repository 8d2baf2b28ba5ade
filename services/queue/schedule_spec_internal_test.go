package queue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/apierr"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// inUTC is p with its times in UTC, for comparison.
func inUTC(p tickPlan) tickPlan {
	p.at, p.next = p.at.UTC(), p.next.UTC()
	return p
}

func mustSpec(t *testing.T, expr, tz string) scheduleSpec {
	t.Helper()
	sp, err := parseSpec(expr, tz)
	require.NoError(t, err)
	return sp
}

func requireRuns(t *testing.T, want []string, got []time.Time) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, utc(want[i]), got[i].UTC(), "run %d", i)
	}
}

// TestScheduleNextRuns: each grammar's next ticks, on whole seconds.
func TestScheduleNextRuns(t *testing.T) {
	t.Parallel()
	from := utc("2026-06-10T10:07:31Z").Add(250 * time.Millisecond)
	for _, c := range []struct {
		expr, tz string
		want     []string
	}{
		{"*/15 * * * *", "", []string{"2026-06-10T10:15:00Z", "2026-06-10T10:30:00Z", "2026-06-10T10:45:00Z"}},
		{"*/20 * * * * *", "UTC", []string{"2026-06-10T10:07:40Z", "2026-06-10T10:08:00Z", "2026-06-10T10:08:20Z"}},
		{"@hourly", "", []string{"2026-06-10T11:00:00Z", "2026-06-10T12:00:00Z", "2026-06-10T13:00:00Z"}},
		{"0 9 * * 1-5", "America/New_York", []string{"2026-06-10T13:00:00Z", "2026-06-11T13:00:00Z", "2026-06-12T13:00:00Z"}},
		// @every counts from the previous tick (the first from creation):
		// sub-second parts are dropped, so ticks fall on whole seconds.
		{"@every 90s", "", []string{"2026-06-10T10:09:01Z", "2026-06-10T10:10:31Z", "2026-06-10T10:12:01Z"}},
	} {
		sp := mustSpec(t, c.expr, c.tz)
		first, ok := sp.next(from)
		require.True(t, ok, c.expr)
		requireRuns(t, c.want, sp.nextRuns(first, 3))
	}
	never := mustSpec(t, "0 0 30 2 *", "")
	_, ok := never.next(from)
	require.False(t, ok, "February 30th never comes")
}

// TestScheduleDST pins robfig/cron v3's behaviour across Europe/Berlin's
// 2026 changes: 02:30 does not exist on 29 March (spring forward at 02:00),
// so that day has no tick; it exists twice on 25 October (fall back at
// 03:00), so that day has two, an hour apart.
func TestScheduleDST(t *testing.T) {
	t.Parallel()
	sp := mustSpec(t, "30 2 * * *", "Europe/Berlin")
	first, _ := sp.next(utc("2026-03-27T12:00:00Z"))
	requireRuns(t, []string{
		"2026-03-28T01:30:00Z", // 02:30 CET
		"2026-03-30T00:30:00Z", // 02:30 CEST: the 29th is skipped
		"2026-03-31T00:30:00Z",
	}, sp.nextRuns(first, 3))
	first, _ = sp.next(utc("2026-10-24T12:00:00Z"))
	requireRuns(t, []string{
		"2026-10-25T00:30:00Z", // 02:30 CEST
		"2026-10-25T01:30:00Z", // 02:30 CET, the repeated hour
		"2026-10-26T01:30:00Z",
	}, sp.nextRuns(first, 3))
}

// TestSchedulePlan: a tick late by less than the grace fires as itself and
// the next is the following tick (still due: the ticker catches up); past
// the grace run_once fires one todo stamped with the latest missed tick and
// skip fires none, both moving next past now.
func TestSchedulePlan(t *testing.T) {
	t.Parallel()
	every := mustSpec(t, "@every 10s", "")
	due := utc("2026-06-10T10:00:00Z")

	p := every.plan(due, due.Add(25*time.Second), misfireRunOnce)
	require.Equal(t, tickPlan{fire: true, at: due, next: due.Add(10 * time.Second), hasNext: true}, p)

	now := due.Add(time.Hour + 5*time.Second)
	p = every.plan(due, now, misfireRunOnce)
	require.Equal(t, tickPlan{fire: true, at: due.Add(time.Hour), next: due.Add(time.Hour + 10*time.Second), hasNext: true}, p)
	p = every.plan(due, now, misfireSkip)
	require.Equal(t, tickPlan{fire: false, at: due.Add(time.Hour), next: due.Add(time.Hour + 10*time.Second), hasNext: true}, p)

	hourly := mustSpec(t, "0 * * * *", "Europe/Berlin")
	p = inUTC(hourly.plan(due, due.Add(5*time.Hour+time.Minute), misfireRunOnce))
	require.Equal(t, tickPlan{fire: true, at: due.Add(5 * time.Hour), next: due.Add(6 * time.Hour), hasNext: true}, p)
	p = hourly.plan(due, due.Add(5*time.Hour+time.Minute), misfireSkip)
	require.False(t, p.fire)
	require.Equal(t, due.Add(6*time.Hour), p.next.UTC())

	// A per-second expression missed for two days stops walking at the
	// bound and still moves next past now.
	secs := mustSpec(t, "* * * * * *", "")
	now = due.Add(48 * time.Hour)
	p = secs.plan(due, now, misfireRunOnce)
	require.True(t, p.fire)
	require.True(t, p.next.After(now))
	require.False(t, p.at.After(now))
}

// TestScheduleSpecErrorsNameTheField: a bad expression is the cron field's
// fault, an unknown or node-local zone the time_zone field's.
func TestScheduleSpecErrorsNameTheField(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ expr, tz, field string }{
		{"61 * * * *", "", "cron"},
		{"* * *", "", "cron"},
		{"@every soon", "", "cron"},
		{"@fortnightly", "", "cron"},
		{"CRON_TZ=Asia/Tokyo 0 9 * * *", "", "cron"},
		{"0 9 * * *", "Mars/Olympus_Mons", "time_zone"},
		{"0 9 * * *", "Local", "time_zone"},
	} {
		_, err := parseSpec(c.expr, c.tz)
		var ae *apierr.Error
		require.ErrorAs(t, err, &ae, "%q in %q", c.expr, c.tz)
		require.Len(t, ae.Violations, 1)
		require.Equal(t, c.field, ae.Violations[0].Field, "%q in %q", c.expr, c.tz)
	}
}
