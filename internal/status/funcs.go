package status

import (
	"fmt"
	"github.com/lock-reaper/lock-reaper/internal/humantext"
	"html/template"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/history"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// funcs are the templates' helpers. Every value from Redis or the database
// goes through html/template's escaping; visible also makes control
// characters readable, so a key cannot hide or forge text on the page.
var funcs = template.FuncMap{
	"visible":   visible,
	"clock":     clock,
	"ago":       humanAgo,
	"age":       durationText,
	"since":     func(now, t time.Time) string { return humantext.Duration(now.Sub(t)) },
	"until":     func(now, t time.Time) string { return humantext.Duration(t.Sub(now)) },
	"dur":       humantext.Duration,
	"secs":      secondsText,
	"num":       num,
	"wayOf":     wayOf,
	"plural":    plural,
	"tone":      tone,
	"liveTone":  func(l any) string { return livenessTone(fmt.Sprint(l)) },
	"stateTone": func(s any) string { return statusTone(fmt.Sprint(s)) },
	"conclusion": func(status any, conclusion string) string {
		return conclusionAfter(fmt.Sprint(status), conclusion)
	},
	"query": query,
	"add":   func(a, b int) int { return a + b },
	"short": short,
	"live":  func(l any) string { return fmt.Sprint(l) },
	"pod":   podText,
	"verdicts": func() []judge.Verdict {
		return holdingVerdicts
	},
	"finding": func(v judge.Verdict) bool { return v.Finding() },
	"evidence": func(jd judge.Judgement) judge.Evidence {
		return jd.Evidence()
	},
	"holdingTask":   func(jd judge.Judgement) string { return reaper.HoldingTask(&jd.Holding, jd.Evidence().Via) },
	"oldestBlocked": oldestBlocked,
	"livenesses":    func() []string { return []string{"alive", "late", "dead", "gone"} },
	"latest": func(ps []history.Entry, n int) []history.Entry {
		return ps[:min(n, len(ps))]
	},
	"modeWords": modeWords,
	"rfc3339":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"first": func(ig []reaper.Ignored, n int) []reaper.Ignored {
		return ig[:min(n, len(ig))]
	},
	"firstCauses": func(cs []Cause, n int) []Cause { return cs[:min(n, len(cs))] },
	"firstTasks": func(ts []judge.TaskJudgement, n int) []judge.TaskJudgement {
		return ts[:min(n, len(ts))]
	},
	"overviewRows":  func() int { return overviewRows },
	"guardReason":   guardReason,
	"guardCommands": guardCommands,
	"sub":           func(a, b int) int { return a - b },
	// taskWhy is what the task's database row would say, or the report
	// says, of a judged task: a stranded task's versions, a stuck or
	// never-started claim's worker.
	"taskWhy": func(tj judge.TaskJudgement) string { return pulpdb.TaskReason(&tj) },
}

// overviewRows is how many rows of a list the overview shows; a link leads
// to the rest, a page at a time. Every table of every page is so bounded:
// a dead worker's hundred thousand lost tasks in one table made the page
// tens of megabytes, held whole while it was written.
const overviewRows = 20

// oldestBlocked is the blocked task that has waited longest (blockedOf).
func oldestBlocked(v *View) *Queued { return v.BlockedTasks().Oldest }

// visible writes a string with only printable characters as it is, any other
// in Go's quoted form, as the command line's tables do.
func visible(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || r == unicode.ReplacementChar }) < 0 {
		return s
	}
	return strconv.Quote(s)
}

// short cuts a long value for a table cell; the full one is in its title.
func short(s string, n int) string {
	s = visible(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func durationText(d *judge.Duration) string {
	if d == nil {
		return "-"
	}
	return humantext.Duration(time.Duration(*d))
}

// secondsText is an age of an explanation, as the rest of the page words
// ages.
func secondsText(s *reaper.Seconds) string {
	if s == nil {
		return "-"
	}
	return humantext.Duration(time.Duration(*s))
}

func podText(p any) string {
	type podLike interface{ String() string }
	if s, ok := p.(podLike); ok {
		return s.String()
	}
	return fmt.Sprint(p)
}
