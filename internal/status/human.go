package status

import (
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/humantext"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// The words the pages put numbers, durations and states in: an engineer
// reads "23 h ago" and "1,067 holdings" at a glance, "82800s" and
// "1067 holding(s)" not.

// humanAgo is how long ago t was at now, "-" when unknown.
func humanAgo(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if t.After(now) {
		return "in " + humantext.Duration(t.Sub(now))
	}
	return humantext.Duration(now.Sub(t)) + " ago"
}

// num writes a count with thousands separators: 1,067.
func num(n int) string { return humantext.Count(n) }

// plural writes a count and its noun, in the singular for one: "1 pass",
// "2 passes". Without the plural form given it adds an s.
func plural(n int, forms ...string) string {
	one, many := forms[0], forms[0]+"s"
	if len(forms) > 1 {
		many = forms[1]
	}
	if n == 1 {
		return "1 " + one
	}
	return num(n) + " " + many
}

// tone is the colour class of a verdict, shown beside its name: a pass
// releases or updates (bad), confirms first or only reports (warn), keeps
// a stale-looking holding for now (info), or keeps it (ok).
func tone(v judge.Verdict) string {
	switch v {
	case judge.VerdictHealthy, judge.VerdictJustified:
		return "ok"
	case judge.VerdictPending:
		return "info"
	case judge.VerdictTaskMissing, judge.VerdictUnclaimed, judge.VerdictNoTask, judge.VerdictUnprotected, judge.VerdictStuckClaim,
		judge.VerdictStuckCanceling, judge.VerdictStranded, judge.VerdictClaimedNotStarted:
		return "warn"
	}
	return "bad"
}

// livenessTone is the colour class of an owner's liveness, beside its name.
func livenessTone(l string) string {
	switch l {
	case heartbeat.Alive.String():
		return "ok"
	case heartbeat.Late.String():
		return "warn"
	case heartbeat.Dead.String(), heartbeat.Gone.String():
		return "bad"
	}
	return "info"
}

// statusTone is the colour class of an explanation's status.
func statusTone(status string) string {
	switch status {
	case "blocked", "lost", "orphaned", "not-found":
		return "bad"
	case "stuck", "unprotected", "waiting":
		return "warn"
	case "running", "starting", "ready", "finished":
		return "ok"
	}
	return "info"
}

// conclusionAfter drops the status an explanation's conclusion starts with,
// which the page shows beside it already ("lost: lost: …").
func conclusionAfter(status, conclusion string) string {
	for _, p := range []string{status + ": ", strings.ReplaceAll(status, "-", " ") + ": "} {
		if rest, ok := strings.CutPrefix(conclusion, p); ok {
			return rest
		}
	}
	return conclusion
}
