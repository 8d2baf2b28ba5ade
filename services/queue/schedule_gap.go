package queue

import (
	"fmt"
	"math/bits"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// The shortest gap between two consecutive ticks of a spec, which the
// setting queue.schedules.min_interval_seconds bounds from below (a spec
// firing every second makes one schedule a tight loop on every node's
// ticker), is worked out from the fields, not by walking the ticks: a
// per-second spec has 31 million ticks a year. Gaps are measured on the
// spec's wall clock. A DST change moves at most the one or two gaps that
// straddle it, twice a year and by the zone's shift (the fall-back hour
// repeats, so "30 2 * * *" in Europe/Berlin fires twice an hour apart, as
// robfig/cron does): not a rate, and counting it would refuse every daily
// spec in a DST zone once the minimum is a day (the spring-forward day has
// 23 hours). The ticker spaces a schedule's ticks in absolute time only
// when its spec itself breaks the minimum (scheduleSpec.spacedFor).

// noGap stands for "more than a day": a spec that fires at most once a day
// and never on two consecutive days, or never. The setting is at most a
// day, so no minimum refuses it.
const noGap = time.Duration(1<<63 - 1)

// shortestGap is the shortest time between two consecutive ticks of sp on
// its zone's wall clock (noGap when that is more than a day). For
// "@every d" it is d as robfig/cron runs it (at least 1 s, whole seconds);
// the request's own duration is checked by checkInterval.
func (sp scheduleSpec) shortestGap() time.Duration {
	switch s := sp.sched.(type) {
	case cron.ConstantDelaySchedule:
		return s.Delay
	case *cron.SpecSchedule:
		return specGap(s)
	}
	return 0 // not a kind cronParser makes: refused, and spaced if stored
}

// specGap works the gap out of the fields. A day's ticks are every
// (hour, minute, second) of the fields in order, so the closest two are
// two seconds of one minute, or the last second of a minute and the first
// of the next minute in the field, and so on up to the last tick of a day
// and the first of the next day, when two consecutive days both match.
func specGap(s *cron.SpecSchedule) time.Duration {
	secs, mins, hours := fieldValues(s.Second, 59), fieldValues(s.Minute, 59), fieldValues(s.Hour, 23)
	if len(secs) == 0 || len(mins) == 0 || len(hours) == 0 {
		return noGap
	}
	// Seconds of the day of the first and the last tick of a minute, an
	// hour and a day.
	minuteSpan := secs[len(secs)-1] - secs[0]
	hourSpan := mins[len(mins)-1]*60 + minuteSpan - mins[0]*60
	daySpan := hours[len(hours)-1]*3600 + hourSpan - hours[0]*3600
	gap := -1
	take := func(g int) {
		if gap < 0 || g < gap {
			gap = g
		}
	}
	if d, ok := closest(secs); ok {
		take(d)
	}
	if d, ok := closest(mins); ok {
		take(d*60 - minuteSpan)
	}
	if d, ok := closest(hours); ok {
		take(d*3600 - hourSpan)
	}
	switch matches, consecutive := dayPattern(s); {
	case !matches: // e.g. "0 0 30 2 *": no tick at all
		return noGap
	case consecutive:
		take(86400 - daySpan)
	}
	if gap < 0 {
		return noGap
	}
	return time.Duration(gap) * time.Second
}

// fieldValues lists the values set in a field's bits, 0..top, ascending
// (robfig/cron's star bit, 1<<63, is above every field).
func fieldValues(field uint64, top int) []int {
	var out []int
	for v := field & (1<<(top+1) - 1); v != 0; v &= v - 1 {
		out = append(out, bits.TrailingZeros64(v))
	}
	return out
}

// closest is the smallest difference between two consecutive values; ok
// is false for fewer than two.
func closest(values []int) (int, bool) {
	d, ok := 0, false
	for i := 1; i < len(values); i++ {
		if g := values[i] - values[i-1]; !ok || g < d {
			d, ok = g, true
		}
	}
	return d, ok
}

// dayPattern walks the 28 years 2001–2028 and reports whether any day
// matches the spec's month, day-of-month and day-of-week fields, and
// whether two consecutive days do. Those years hold every combination a
// day and the next can have (each date on each weekday, Feb 28 of leap and
// common years on each weekday: they keep the four-year rule throughout),
// so the answer holds for every year; the walk is 10,227 cheap steps at
// most (a monthly spec) and stops at the first consecutive pair (a daily
// one, at once).
func dayPattern(s *cron.SpecSchedule) (matches, consecutive bool) {
	year, month, day, weekday := 2001, time.January, 1, time.Monday
	prev := false
	for year <= 2028 {
		cur := dayMatches(s, month, day, weekday)
		if cur && prev {
			return true, true
		}
		matches = matches || cur
		prev = cur
		weekday = (weekday + 1) % 7
		if day++; day > daysIn(year, month) {
			day = 1
			if month++; month > time.December {
				month, year = time.January, year+1
			}
		}
	}
	return matches, false
}

// dayMatches is robfig/cron's day rule: the month must match, and the day
// of month and the day of week must both match when either field is a
// star (or ?), either one otherwise.
func dayMatches(s *cron.SpecSchedule, month time.Month, day int, weekday time.Weekday) bool {
	const star = 1 << 63
	if s.Month&(1<<uint(month)) == 0 {
		return false
	}
	dom, dow := s.Dom&(1<<uint(day)) != 0, s.Dow&(1<<uint(weekday)) != 0
	if s.Dom&star != 0 || s.Dow&star != 0 {
		return dom && dow
	}
	return dom || dow
}

// daysIn is the number of days of month in year (Gregorian), worked out
// rather than asked of time.Date: dayPattern asks it 10,000 times.
func daysIn(year int, month time.Month) int {
	switch month {
	case time.February:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}

// checkInterval refuses a spec (expr as given, sp as parsed) whose ticks
// can come closer than least, and an "@every" that is not a positive whole
// number of seconds (robfig/cron would run "@every -1s" and "@every 1ms"
// every second, and "@every 1.5s" every second too). The error names the
// field cron and says the minimum and the setting that sets it.
func checkInterval(expr string, sp scheduleSpec, least time.Duration) error {
	gap := sp.shortestGap()
	every, isEvery := everyDuration(expr)
	if isEvery {
		if every <= 0 {
			return invalid("cron", "@every needs a positive duration, such as @every 30s")
		}
		gap = every
	}
	if gap < least {
		return invalid("cron", fmt.Sprintf(
			"ticks as little as %v apart; a schedule may tick at most every %v (setting queue.schedules.min_interval_seconds)",
			gap, least))
	}
	if isEvery && every%time.Second != 0 {
		return invalid("cron", "@every takes whole seconds (ticks fall on whole seconds), such as @every 90s")
	}
	return nil
}

// everyDuration is the duration of an "@every <duration>" expression as
// written; ok is false for any other expression (or one that does not
// parse, which parseSpec has refused already).
func everyDuration(expr string) (time.Duration, bool) {
	const every = "@every "
	expr = strings.TrimSpace(expr)
	if !strings.HasPrefix(expr, every) {
		return 0, false
	}
	d, err := time.ParseDuration(expr[len(every):])
	return d, err == nil
}
