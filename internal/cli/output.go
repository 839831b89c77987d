package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// writeReport prints the report as text or as one JSON document. limit
// bounds the rows of each text table (0: all); JSON is always complete.
func writeReport(w io.Writer, format string, rep *reaper.Report, limit int) error {
	if isJSON(format) {
		return writeJSONReport(w, format, rep)
	}
	return writeTextReport(w, rep, layout{limit: limit})
}

// shown returns how many of n rows a table prints.
func shown(n, limit int) int {
	if limit > 0 && n > limit {
		return limit
	}
	return n
}

func resultText(r reaper.Result, deferred string) string {
	if deferred != "" {
		return string(r) + " (" + deferred + ")"
	}
	return string(r)
}

func evidenceText(f reaper.Finding) string {
	e := f.Evidence()
	parts := []string{"owner " + e.OwnerLiveness.String()}
	if e.HeartbeatAge != nil {
		parts[0] += " (heartbeat " + reaper.SecondsOf(e.HeartbeatAge).String() + " ago)"
	}
	switch {
	case e.TaskState != "":
		t := "task " + quoteText(e.TaskState)
		if e.FinishedAge != nil {
			t += " " + reaper.SecondsOf(e.FinishedAge).String() + " ago"
		}
		parts = append(parts, t)
	case f.Kind == judge.KindTask:
		parts = append(parts, "no task row")
	}
	if e.AppLock != "" && e.AppLockLiveness != nil {
		parts = append(parts, "claimed by "+quoteText(e.AppLock)+" ("+e.AppLockLiveness.String()+")")
	}
	if e.Via != "" {
		parts = append(parts, "via "+quoteText(e.Via))
	}
	if f.FirstSeen != nil {
		parts = append(parts, "suspect since "+f.FirstSeen.UTC().Format(time.RFC3339))
	}
	return strings.Join(parts, "; ")
}

func summaryText(rep *reaper.Report) string {
	s := rep.Summary
	var b strings.Builder
	released, wouldRelease := s.FindingsByResult[reaper.ResultReleased], s.FindingsByResult[reaper.ResultWouldRelease]
	if rep.Mode == reaper.ModeAudit {
		fmt.Fprintf(&b, "would release %d holdings", wouldRelease)
	} else {
		fmt.Fprintf(&b, "released %d holdings", released)
		if n := s.FindingsByResult[reaper.ResultAlreadyGone] + s.FindingsByResult[reaper.ResultOwnerChanged]; n > 0 {
			fmt.Fprintf(&b, " (%d already gone or re-owned, left alone)", n)
		}
	}
	fmt.Fprintf(&b, "; %d suspects awaiting confirmation", s.Suspects)
	tasks := s.TasksByResult[reaper.ResultUpdated]
	if rep.Mode == reaper.ModeAudit {
		tasks = s.TasksByResult[reaper.ResultWouldUpdate]
		fmt.Fprintf(&b, "; would update %d tasks", tasks)
	} else {
		fmt.Fprintf(&b, "; updated %d tasks", tasks)
		if n := s.TasksByResult[reaper.ResultSkipped]; n > 0 {
			fmt.Fprintf(&b, " (%d skipped: changed meanwhile)", n)
		}
	}
	if s.Deferred > 0 {
		b.WriteString(deferredSummary(rep))
	}
	fmt.Fprintf(&b, ".\nBy verdict: %s.", countsText(s.HoldingsByVerdict))
	return b.String()
}

func countsText(m map[judge.Verdict]int) string {
	if len(m) == 0 {
		return "no holdings"
	}
	keys := make([]judge.Verdict, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// By name, as the report has always listed them.
	sort.Slice(keys, func(a, b int) bool { return keys[a].String() < keys[b].String() })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// deferredSummary says, per reason, how much a pass held back and what ends
// the hold: only a per-pass limit waits for the next pass; the mass-death
// guard holds until pulpcore deletes the dead worker rows, the pods prove
// the deaths or a pass runs with --force, however many passes come.
func deferredSummary(rep *reaper.Report) string {
	counts := map[string]int{}
	var order []string
	note := func(why string) {
		if counts[why] == 0 {
			order = append(order, why)
		}
		counts[why]++
	}
	for _, f := range rep.Findings {
		if f.Result == reaper.ResultDeferred {
			note(f.Deferred)
		}
	}
	for _, t := range rep.Tasks {
		if t.Result == reaper.ResultDeferred {
			note(t.Deferred)
		}
	}
	sort.Slice(order, func(a, b int) bool { return deferredRank(order[a]) < deferredRank(order[b]) })
	var b strings.Builder
	for _, why := range order {
		n := counts[why]
		switch why {
		case judge.DeferredMassDeath:
			fmt.Fprintf(&b, "; %d held back by the mass-death guard until pulpcore deletes the dead worker rows, "+
				"the pods prove the deaths, or a pass runs with --force", n)
		case judge.DeferredMaxReleases, judge.DeferredMaxTaskUpdates:
			fmt.Fprintf(&b, "; %d deferred to the next pass (%s)", n, why)
		case judge.DeferredAliveOwner:
			fmt.Fprintf(&b, "; %d held back: the owner has an online AppStatus row (--force if it is really dead)", n)
		case "":
			fmt.Fprintf(&b, "; %d deferred", n)
		default:
			fmt.Fprintf(&b, "; %d deferred (%s)", n, why)
		}
	}
	return b.String()
}

// deferredRank puts what needs a person first: the mass-death guard's hold.
func deferredRank(why string) int {
	switch why {
	case judge.DeferredMassDeath:
		return 0
	case judge.DeferredAliveOwner:
		return 1
	}
	return 2
}
