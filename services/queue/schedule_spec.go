package queue

import (
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// cronParser reads 5 fields (minute first), 6 (seconds first), "@every
// <duration>" and the descriptors (@yearly … @hourly): robfig/cron's
// standard grammar with an optional seconds field.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// misfireGrace is how late a tick may be and still fire as itself: ticks
// missed by less (a slow pass, a short outage of every node) are each fired
// late, oldest first; beyond it the schedule's misfire policy decides.
const misfireGrace = time.Minute

// The misfire policies, as stored.
const (
	misfireRunOnce = "run_once"
	misfireSkip    = "skip"
)

// maxCatchUpSteps bounds the walk to the latest missed tick of a cron
// expression after a long outage (a per-second expression missed for a
// day); past it the tick stamped is the last one reached.
const maxCatchUpSteps = 100_000

// scheduleSpec is a parsed cron expression and the zone its fields are
// read in.
type scheduleSpec struct {
	sched cron.Schedule
	loc   *time.Location
	// spacing, when set, is the least time between two ticks: the spec
	// fires more often than the setting queue.schedules.min_interval_seconds
	// allows (it was stored before the minimum was raised, or before there
	// was one), so it ticks at most that often (spacedFor).
	spacing time.Duration
}

// parseSpec parses expr in the IANA zone tz ("" is UTC); the error names
// the field at fault.
func parseSpec(expr, tz string) (scheduleSpec, error) {
	if tz == "" {
		tz = "UTC"
	}
	// "Local" is each node's own zone: nodes would disagree on the ticks.
	loc, err := time.LoadLocation(tz)
	if err != nil || tz == "Local" {
		return scheduleSpec{}, invalid("time_zone", "must be an IANA time zone name such as UTC or Europe/Berlin")
	}
	expr = strings.TrimSpace(expr)
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return scheduleSpec{}, invalid("cron", "must not name a time zone: set time_zone")
	}
	s, err := cronParser.Parse(expr)
	if err != nil {
		return scheduleSpec{}, invalid("cron", "is not a cron expression (5 or 6 fields, @every <duration> or a descriptor such as @hourly): "+err.Error())
	}
	return scheduleSpec{sched: s, loc: loc}, nil
}

// spacedFor is sp as the ticker runs it under the minimum interval least:
// unchanged when its ticks are never closer (checkInterval let it in, or
// the minimum was lowered since), else ticking at most every least — each
// tick the spec's first at least least after the previous one. So a
// schedule stored before a raised minimum keeps running, at the rate the
// operator allows; the spacing is measured in absolute time.
func (sp scheduleSpec) spacedFor(least time.Duration) scheduleSpec {
	sp.spacing = 0
	if sp.shortestGap() < least {
		sp.spacing = least
	}
	return sp
}

// after is the spec's first tick strictly after t (the first tick of a new
// or resumed schedule); ok is false when there is none (an expression such
// as "0 0 30 2 *" never fires). Ticks fall on whole seconds.
func (sp scheduleSpec) after(t time.Time) (time.Time, bool) {
	n := sp.sched.Next(t.In(sp.loc))
	return n, !n.IsZero()
}

// next is the tick that follows the tick t: the spec's first after it, or
// with spacing its first at least spacing after it. "@every" counts from
// t, so successive ticks stay anchored at the stored previous tick and
// every node computes the same one.
func (sp scheduleSpec) next(t time.Time) (time.Time, bool) {
	if sp.spacing <= 0 {
		return sp.after(t)
	}
	if every, ok := sp.every(); ok {
		return t.Add(every), true
	}
	return sp.after(t.Add(sp.spacing - time.Nanosecond))
}

// every is an "@every" spec's step between ticks, with spacing the
// smallest multiple of its delay that is at least the spacing; ok is false
// for a cron expression.
func (sp scheduleSpec) every() (time.Duration, bool) {
	c, ok := sp.sched.(cron.ConstantDelaySchedule)
	if !ok {
		return 0, false
	}
	if sp.spacing <= c.Delay {
		return c.Delay, true
	}
	return (sp.spacing + c.Delay - 1) / c.Delay * c.Delay, true
}

// nextRuns lists up to n ticks from first (itself included).
func (sp scheduleSpec) nextRuns(first time.Time, n int) []time.Time {
	out := []time.Time{first}
	for t := first; len(out) < n; {
		var ok bool
		if t, ok = sp.next(t); !ok {
			break
		}
		out = append(out, t)
	}
	return out
}

// tickPlan is what a ticker does with a due tick.
type tickPlan struct {
	fire bool
	// at stamps the fired todo (its dedupe key and last_run_at).
	at time.Time
	// next is the new next_run_at; hasNext false means none is left.
	next    time.Time
	hasNext bool
}

// plan decides about the tick due at due, given the database's now and the
// misfire policy. It depends only on its arguments, so every node decides
// alike; the fire statement's conditional mark makes one of them win
// anyway.
func (sp scheduleSpec) plan(due, now time.Time, misfire string) tickPlan {
	if now.Sub(due) <= misfireGrace {
		next, ok := sp.next(due)
		return tickPlan{fire: true, at: due, next: next, hasNext: ok}
	}
	latest, next, ok := sp.latestBefore(due, now)
	return tickPlan{fire: misfire != misfireSkip, at: latest, next: next, hasNext: ok}
}

// latestBefore walks from the missed tick due to the latest tick ≤ now and
// returns it with the first tick after now.
func (sp scheduleSpec) latestBefore(due, now time.Time) (latest, next time.Time, ok bool) {
	if every, isEvery := sp.every(); isEvery {
		steps := now.Sub(due) / every
		latest = due.Add(steps * every)
		return latest, latest.Add(every), true
	}
	latest = due
	for range maxCatchUpSteps {
		if next, ok = sp.next(latest); !ok || next.After(now) {
			return latest, next, ok
		}
		latest = next
	}
	// The walk gave up: the first tick after now, and no closer to latest
	// (fired as the misfire's one todo) than the spacing.
	from := now
	if spaced := latest.Add(sp.spacing - time.Nanosecond); spaced.After(from) {
		from = spaced
	}
	next, ok = sp.after(from)
	return latest, next, ok
}
