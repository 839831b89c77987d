package explain

import (
	"fmt"
	"sort"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/humantext"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// The words an explanation puts a holding, a process or a count in.

// fate says what the next pass does with a holding; any but a kept one
// awaits a pass.
func (x *explainer) fate(a judge.Action, deferred string, many bool) string {
	it := "it"
	if many {
		it = "them"
	}
	if a != judge.ActionKeep {
		x.awaitsPass = true
	}
	switch {
	case a == judge.ActionRelease && deferred != "":
		return fmt.Sprintf("a pass would release %s but %s holds it back", it, deferred)
	case a == judge.ActionRelease:
		return x.nextPass() + " releases " + it
	case a == judge.ActionSuspect:
		return "released once confirmed, confirm_after after its first sighting"
	default:
		return "kept"
	}
}

func finishVerb(stateAfter string) string {
	switch stateAfter {
	case judge.StateFailed:
		return "fails"
	case judge.StateWaiting:
		return "requeues"
	default:
		return "cancels"
	}
}

// livenessWord reads better in a sentence than the liveness name.
func livenessWord(l heartbeat.Liveness) string {
	if l == heartbeat.Alive {
		return "live"
	}
	return l.String()
}

// ownerPhrase names a holding's owner with its liveness: "dead worker 1@w".
func ownerPhrase(h Holder) string {
	if h.Liveness == heartbeat.Gone {
		return "owner " + h.Owner + ", which has no AppStatus row"
	}
	return livenessWord(h.Liveness) + " worker " + h.Owner
}

// evidencePhrase is the verdict and heartbeat age behind a holding's fate.
func evidencePhrase(h Holder) string {
	s := h.Verdict.String()
	if h.HeartbeatAge != nil {
		s += ", heartbeat " + humantext.Duration(time.Duration(*h.HeartbeatAge)) + " ago"
	}
	return s
}

// processPhrase describes the process a task is claimed by: "live worker
// 1@w (heartbeat 2s ago)".
func processPhrase(p *Process) string {
	if p == nil {
		return "no process (unclaimed)"
	}
	if p.Name == "" {
		return "a process whose AppStatus row " + p.AppLockID + " is gone"
	}
	kind := p.AppType
	if kind == "" {
		kind = "process"
	}
	s := livenessWord(p.Liveness) + " " + kind + " " + p.Name
	if p.HeartbeatAge != nil {
		s += " (heartbeat " + humantext.Duration(time.Duration(*p.HeartbeatAge)) + " ago)"
	}
	return s
}

func distinctOwners(hs []Holder) []string {
	seen := map[string]bool{}
	var out []string
	for _, h := range hs {
		if !seen[h.Owner] {
			seen[h.Owner] = true
			out = append(out, h.Owner)
		}
	}
	sort.Strings(out)
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func secondsPtr(d time.Duration) *reaper.Seconds { v := reaper.Seconds(d); return &v }
