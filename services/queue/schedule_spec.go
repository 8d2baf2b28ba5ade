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

// next is the first tick strictly after t; ok is false when there is none
// (an expression such as "0 0 30 2 *" never fires). Ticks fall on whole
// seconds. "@every" counts from t, so successive ticks stay anchored at the
// stored previous tick and every node computes the same one.
func (sp scheduleSpec) next(t time.Time) (time.Time, bool) {
	n := sp.sched.Next(t.In(sp.loc))
	return n, !n.IsZero()
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
	if every, isEvery := sp.sched.(cron.ConstantDelaySchedule); isEvery {
		steps := now.Sub(due) / every.Delay
		latest = due.Add(steps * every.Delay)
		return latest, latest.Add(every.Delay), true
	}
	latest = due
	for range maxCatchUpSteps {
		if next, ok = sp.next(latest); !ok || next.After(now) {
			return latest, next, ok
		}
		latest = next
	}
	next, ok = sp.next(now)
	return latest, next, ok
}
