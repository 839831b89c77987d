package explain

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/humantext"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// What an explanation concludes, and the clauses it is said in.

func (x *explainer) notFound() string {
	msg := "not found: no task " + x.id
	for _, h := range x.e.TaskLocks {
		msg += fmt.Sprintf("; yet %s holds its task lock (%s): %s", h.Owner, h.Verdict, x.fate(h.Action, h.Deferred, false))
	}
	return msg
}

// conclude decides the status and the one-line conclusion.
func (x *explainer) conclude() (Status, string) {
	t := x.e.Task
	if tj := x.e.TaskVerdict; tj != nil {
		if s, msg, ok := x.taskVerdictConclusion(*tj); ok {
			return s, msg
		}
	}
	claim := x.e.Claim
	switch {
	case judge.Final(t.State):
		return StatusFinished, x.finished()
	case x.e.Unprotected != nil:
		return StatusUnprotected, x.unprotectedConclusion()
	case t.State == judge.StateRunning || t.State == judge.StateCanceling:
		return StatusRunning, fmt.Sprintf("%s on %s", t.State, processPhrase(claim))
	case t.AppLockID != "":
		return StatusStarting, fmt.Sprintf("claimed by %s: about to run", processPhrase(claim))
	}
	return x.queued()
}

func (x *explainer) taskVerdictConclusion(tj reaper.TaskVerdict) (Status, string, bool) {
	held := ""
	if tj.Deferred != "" {
		held = fmt.Sprintf(" (held back this pass: %s)", tj.Deferred)
	}
	worker := processPhrase(x.e.Claim)
	switch {
	case tj.Verdict == judge.VerdictLost && x.e.Claim == nil:
		return StatusLost, fmt.Sprintf("lost: %s with no claim, its worker's row is gone; %s %s it%s", tj.StateBefore, x.nextPass(), finishVerb(tj.StateAfter), held), true
	case tj.Verdict == judge.VerdictLost:
		return StatusLost, fmt.Sprintf("lost: claimed by %s; %s %s it%s", worker, x.nextPass(), finishVerb(tj.StateAfter), held), true
	case tj.Verdict == judge.VerdictOrphanedClaim:
		next := "requeues it"
		if !tj.ClearClaim {
			next = finishVerb(tj.StateAfter) + " it"
		}
		if len(x.e.TaskLocks) > 0 {
			next = "releases its lock and " + next
		}
		return StatusOrphaned, fmt.Sprintf("orphaned: claimed by %s; %s %s%s", worker, x.nextPass(), next, held), true
	case tj.Verdict == judge.VerdictStuckClaim:
		var when string
		if tj.Action == judge.ActionSuspect {
			// Confirmation takes a second pass, so it awaits passes too.
			x.awaitsPass = true
			when = "requeued once confirmed"
			if first := tj.FirstSeen; first != nil {
				when += " (suspect since " + first.UTC().Format(time.RFC3339) + ")"
			}
		} else {
			when = x.nextPass() + " requeues it"
		}
		return StatusStuck, fmt.Sprintf("stuck: claimed by %s, which holds no lock for it; %s%s", worker, when, held), true
	case tj.Verdict == judge.VerdictStuckCanceling:
		var when string
		started := "which never started it"
		switch {
		case tj.Action == judge.ActionReport:
			started = "which may never have started it"
			when = "a pass never cancels it: " + tj.Deferred
		case tj.Action == judge.ActionSuspect:
			x.awaitsPass = true
			when = "canceled once confirmed"
			if first := tj.FirstSeen; first != nil {
				when += " (suspect since " + first.UTC().Format(time.RFC3339) + ")"
			}
		default:
			when = x.nextPass() + " cancels it"
		}
		return StatusStuck, fmt.Sprintf("stuck canceling: claimed by %s, %s and holds no lock for it; %s", worker, started, when), true
	case tj.Verdict == judge.VerdictStranded:
		return StatusStuck, strandedConclusion(x, tj, worker, held), true
	case tj.Verdict == judge.VerdictClaimedNotStarted:
		// Said, never written: a requeue would let two workers run it.
		var since time.Duration
		if tj.FirstSeen != nil {
			since = x.e.DBNow.Sub(*tj.FirstSeen)
		}
		return StatusStuck, "claimed, not started: " + pulpdb.ClaimedNotStartedWords(worker, since) + "; a pass never writes it", true
	}
	return "", "", false
}

func (x *explainer) finished() string {
	msg := "finished (" + x.e.Task.State + ")"
	var left []string
	for _, h := range x.e.TaskLocks {
		left = append(left, fmt.Sprintf("%s still holds its task lock (%s): %s", h.Owner, h.Verdict, x.fate(h.Action, h.Deferred, false)))
	}
	if len(left) > 0 {
		msg += "; " + strings.Join(left, "; ")
	}
	return msg
}

// queued explains a waiting, unclaimed task: Pulp's workers acquire its
// locks only once no one holds them in a conflicting way and no older task
// needs them.
func (x *explainer) queued() (Status, string) {
	var stale, live []Holder
	for _, h := range x.blockers() {
		if h.Action == judge.ActionKeep {
			live = append(live, h)
		} else {
			stale = append(stale, h)
		}
	}
	var clauses []string
	status := StatusReady
	if len(stale) > 0 {
		status = StatusBlocked
		clauses = append(clauses, x.staleClause(stale))
	}
	if len(live) > 0 {
		if status == StatusReady {
			status = StatusWaiting
		}
		clauses = append(clauses, x.liveClause(live))
	}
	if ahead := x.aheadClause(append(stale, live...)); ahead != "" {
		if status == StatusReady {
			status = StatusWaiting
		}
		clauses = append(clauses, ahead)
	}
	if len(clauses) == 0 {
		return StatusReady, "ready to run: nothing holds its resources and no older task needs them"
	}
	for i := 1; i < len(clauses); i++ {
		clauses[i] = "then " + clauses[i]
	}
	return status, strings.Join(clauses, "; ")
}

// blockers lists the holdings in the waiting task's way, task lock first,
// then in the order of its reservations.
func (x *explainer) blockers() []Holder {
	var out []Holder
	for _, h := range x.e.TaskLocks {
		if h.Blocks {
			out = append(out, h)
		}
	}
	for _, rn := range x.e.Resources {
		for _, h := range rn.Holders {
			if h.Blocks {
				out = append(out, h)
			}
		}
	}
	return out
}

// staleClause names the owners of stale and suspect holdings in the way;
// releases come before suspects, so the first one named is the surest.
func (x *explainer) staleClause(hs []Holder) string {
	sort.SliceStable(hs, func(a, b int) bool { return hs[a].Action == judge.ActionRelease && hs[b].Action != judge.ActionRelease })
	first := hs[0]
	subject := "a stale lock of " + ownerPhrase(first)
	switch {
	case first.Own && first.Kind == judge.KindTask:
		// A worker took its locks and stopped before claiming it.
		subject = "its own task lock, taken by " + ownerPhrase(first) + " that never claimed it"
	case first.Verdict == judge.VerdictTaskFinished && first.Liveness != heartbeat.Dead && first.Task != nil:
		// A live worker that lost track of a finished task's locks.
		subject = fmt.Sprintf("a lock %s kept for finished task %s", first.Owner, first.Task.ID)
	case first.Action == judge.ActionSuspect:
		subject = "a suspect lock of " + ownerPhrase(first)
	}
	if n := len(distinctOwners(hs)) - 1; n > 0 {
		subject += fmt.Sprintf(" and %d other owner%s", n, plural(n))
	}
	return fmt.Sprintf("blocked by %s (%s): %s", subject, evidencePhrase(first), x.fate(first.Action, first.Deferred, len(hs) > 1))
}

func (x *explainer) liveClause(hs []Holder) string {
	h := hs[0]
	var msg string
	if h.Task != nil && h.Task.State != "" {
		how := h.Task.State + " on " + ownerPhrase(h)
		if h.HeartbeatAge != nil {
			how += " (heartbeat " + humantext.Duration(time.Duration(*h.HeartbeatAge)) + " ago)"
		}
		if t, ok := x.in.Snapshot.Tasks[h.Task.ID]; ok && t.AppLockID != "" {
			how = h.Task.State + " on " + processPhrase(x.process(t.AppLockID))
			if t.State == judge.StateWaiting {
				how = "claimed by " + processPhrase(x.process(t.AppLockID))
			}
		}
		msg = fmt.Sprintf("waiting behind task %s (%s), %s", h.Task.ID, h.Task.Name, how)
	} else {
		msg = fmt.Sprintf("waiting for %s, held by %s (%s, kept)", h.Key, ownerPhrase(h), evidencePhrase(h))
	}
	if n := len(distinctOwners(hs)) - 1; n > 0 {
		msg += fmt.Sprintf(" and %d other live owner%s", n, plural(n))
	}
	return msg
}

// aheadClause names the oldest task that goes first and is not already named
// as the holder of a lock in the way; "" when there is none.
func (x *explainer) aheadClause(blockers []Holder) string {
	named := map[string]bool{}
	for _, h := range blockers {
		if h.Task != nil {
			named[h.Task.ID] = true
		}
	}
	var rest []TaskAhead
	for _, a := range x.e.Ahead {
		if !named[a.ID] {
			rest = append(rest, a)
		}
	}
	if len(rest) == 0 {
		return ""
	}
	a := rest[0]
	who := "unclaimed"
	if a.Claim != nil {
		who = "claimed by " + processPhrase(a.Claim)
	}
	msg := fmt.Sprintf("waiting behind older task %s (%s), %s, %s, which needs %s first", a.ID, a.Name, a.State, who, strings.Join(a.Conflicts, ", "))
	if n := x.e.AheadTotal - (len(x.e.Ahead) - len(rest)) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more older task%s)", n, plural(n))
	}
	return msg
}
