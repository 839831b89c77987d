package deploy

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cronInterval returns the shortest time between two runs of a standard
// five-field cron schedule (or an @hourly-style macro), found by stepping
// through eight days minute by minute. It supports *, numbers, ranges, steps
// and lists; names of months and weekdays are not supported.
func cronInterval(schedule string) (time.Duration, error) {
	macros := map[string]string{
		"@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
		"@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *",
	}
	if m, ok := macros[schedule]; ok {
		schedule = m
	}
	fields := strings.Fields(schedule)
	if len(fields) != 5 {
		return 0, fmt.Errorf("want five fields, got %d", len(fields))
	}
	bounds := [5][2]int{{0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 7}}
	var sets [5]map[int]bool
	for i, f := range fields {
		set, err := cronField(f, bounds[i][0], bounds[i][1])
		if err != nil {
			return 0, fmt.Errorf("field %d %q: %w", i+1, f, err)
		}
		sets[i] = set
	}
	if sets[4][7] {
		sets[4][0] = true
	}
	domAny, dowAny := fields[2] == "*", fields[4] == "*"
	matches := func(t time.Time) bool {
		if !sets[0][t.Minute()] || !sets[1][t.Hour()] || !sets[3][int(t.Month())] {
			return false
		}
		dom, dow := sets[2][t.Day()], sets[4][int(t.Weekday())]
		switch {
		case domAny || dowAny:
			return dom && dow
		default:
			return dom || dow // cron's rule when both are restricted
		}
	}

	start := time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC)
	var last time.Time
	var shortest time.Duration
	for t := start; t.Before(start.Add(8 * 24 * time.Hour)); t = t.Add(time.Minute) {
		if !matches(t) {
			continue
		}
		if !last.IsZero() && (shortest == 0 || t.Sub(last) < shortest) {
			shortest = t.Sub(last)
		}
		last = t
	}
	if shortest == 0 {
		return 0, fmt.Errorf("runs less than twice in eight days")
	}
	return shortest, nil
}

// cronField expands one cron field into the set of values it matches.
func cronField(field string, lo, hi int) (map[int]bool, error) {
	set := map[int]bool{}
	for _, part := range strings.Split(field, ",") {
		rng, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			var err error
			if step, err = strconv.Atoi(stepText); err != nil || step < 1 {
				return nil, fmt.Errorf("bad step %q", stepText)
			}
		}
		from, to := lo, hi
		if rng != "*" {
			a, b, isRange := strings.Cut(rng, "-")
			var err error
			if from, err = strconv.Atoi(a); err != nil {
				return nil, fmt.Errorf("bad value %q", a)
			}
			to = from
			if isRange {
				if to, err = strconv.Atoi(b); err != nil {
					return nil, fmt.Errorf("bad value %q", b)
				}
			} else if hasStep {
				to = hi
			}
		}
		if from < lo || to > hi || from > to {
			return nil, fmt.Errorf("%d-%d is outside %d-%d", from, to, lo, hi)
		}
		for v := from; v <= to; v += step {
			set[v] = true
		}
	}
	return set, nil
}

func TestCronInterval(t *testing.T) {
	t.Parallel()
	for schedule, want := range map[string]time.Duration{
		"*/5 * * * *":    5 * time.Minute,
		"*/10 * * * *":   10 * time.Minute,
		"*/7 * * * *":    4 * time.Minute, // minute 56, then 0
		"0,30 * * * *":   30 * time.Minute,
		"15 */2 * * *":   2 * time.Hour,
		"@hourly":        time.Hour,
		"0 3 * * 1-5":    24 * time.Hour,
		"5-10/5 * * * *": 5 * time.Minute,
	} {
		got, err := cronInterval(schedule)
		if err != nil || got != want {
			t.Errorf("cronInterval(%q) = %s, %v; want %s", schedule, got, err, want)
		}
	}
	for _, bad := range []string{"* * * *", "61 * * * *", "*/0 * * * *", "0 0 * JAN *"} {
		if _, err := cronInterval(bad); err == nil {
			t.Errorf("cronInterval(%q) accepted it", bad)
		}
	}
}
