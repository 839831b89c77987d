package status

import (
	"strings"

	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// Command is a shell line that ends something now, and when to run it. The
// pages show Line as a code block of its own, copied whole and never broken
// inside a word (the phone broke "lock-⏎reaper release --⏎owner").
type Command struct {
	Line string
	// Then says when, or what follows: "if the workers really died".
	Then string
}

// rerunAdvice is how the report's guard reasons end for a terminal that
// can rerun; a page runs nothing, so it names the commands instead.
const rerunAdvice = "; rerun with --force"

// guardReason is a guard's reason as the page says it: without the advice
// to rerun, which guardCommands replaces.
func guardReason(g reaper.Guard) string {
	r, _, _ := strings.Cut(g.Reason, rerunAdvice)
	return r
}

// guardCommands end what a guard holds back. The mass-death guard names a
// release of each dead worker that blocks tasks (OWNER when none is known)
// and a forced pass; the alive-owner guard a forced release of its owner.
func guardCommands(v *View, g reaper.Guard) []Command {
	switch g.Name {
	case judge.GuardMassDeath:
		var out []Command
		for _, c := range v.BlockingCauses() {
			if c.Lead.Holder.Deferred == judge.DeferredMassDeath && len(out) < 3 {
				out = append(out, massDeathCommands(c.Owner)[0])
			}
		}
		if len(out) == 0 {
			out = append(out, Command{Line: "lock-reaper release --owner OWNER --dry-run", Then: "for a worker you know is dead, then again without --dry-run"})
		}
		return append(out, massDeathCommands("")[1])
	case judge.GuardAliveOwner:
		if owner, _, ok := strings.Cut(g.Reason, " has an online AppStatus row"); ok {
			return []Command{{Line: "lock-reaper release --owner " + shellWord(owner) + " --force", Then: "if it is really dead"}}
		}
	}
	return nil
}
