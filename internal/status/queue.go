package status

import (
	"fmt"
	"sort"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/explain"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// Queued is one waiting, unclaimed task and what explain says of it.
type Queued struct {
	Row pulpdb.TaskRow
	// Position is its place in Pulp's fetch order, from 1.
	Position int
	// Wait is how long it has waited, on the database clock.
	Wait        time.Duration
	Explanation explain.Explanation
	// Chain is every holding in its way, with when it will be freed.
	Chain []Link
}

// Link is one holding in a waiting task's way.
type Link struct {
	// Resource is the reserved resource; "" for the task's own task lock.
	Resource string
	Need     judge.Kind
	Holder   explain.Holder
	// Freed says when the holding goes: at the next pass, once confirmed,
	// or never while its owner lives.
	Freed string
	// Commands end it now, when nothing on its own will: each a shell line
	// the page shows as a code block, whole, never broken inside a word.
	Commands []Command
	// FreedAt is when, if known.
	FreedAt time.Time
	// Released says the pass of the view released it already.
	Released bool
	// Since is when the task a live worker keeps the holding for started,
	// if known (runningSince).
	Since time.Time
}

// Blocked says a stale or suspect lock stands in the task's way, one the
// pass of the view has not released already.
func (q Queued) Blocked() bool {
	if q.Explanation.Status != explain.StatusBlocked {
		return false
	}
	for _, l := range q.Chain {
		if !l.Released && l.Holder.Action != judge.ActionKeep {
			return true
		}
	}
	return false
}

// queue explains each waiting task with explain.Explain, on an inspection
// holding only the judgements that matter to it (its task lock and the
// holdings of its resources) and the older waiting tasks that conflict with
// it, taken from the queue itself: each task costs what it reserves, not what
// the snapshot holds.
func (v *View) queue(rows []pulpdb.TaskRow) {
	byForm := map[string][]int{}
	for i, r := range rows {
		for _, f := range r.Reserved {
			byForm[f] = append(byForm[f], i)
		}
	}
	v.Queue = make([]Queued, len(rows))
	for i, r := range rows {
		ahead, total := aheadOf(i, rows, byForm)
		sub := *v.In
		sub.Plan.Holdings = v.relevant(r.ID, r.Reserved)
		sub.Explained = &pulpdb.ExplainedTask{TaskID: r.ID, Row: &rows[i], Ahead: ahead, AheadTotal: total}
		q := Queued{Row: r, Position: i + 1, Wait: v.Now().Sub(r.Created), Explanation: explain.Explain(&sub, r.ID)}
		q.Chain = v.chain(q.Explanation, sub.Plan.Holdings)
		v.Queue[i] = q
	}
	v.Blocked = blockedOf(v.Queue).Count
}

// aheadOf lists the tasks before position i that reserve a form conflicting
// with its reservations, in fetch order, at most pulpdb.MaxAhead, and how
// many there are.
func aheadOf(i int, rows []pulpdb.TaskRow, byForm map[string][]int) ([]pulpdb.TaskRow, int) {
	seen := map[int]bool{}
	for _, f := range pulpdb.ConflictingEntries(rows[i].Reserved) {
		for _, j := range byForm[f] {
			if j >= i {
				break
			}
			seen[j] = true
		}
	}
	at := make([]int, 0, len(seen))
	for j := range seen {
		at = append(at, j)
	}
	sort.Ints(at)
	total := len(at)
	if len(at) > pulpdb.MaxAhead {
		at = at[:pulpdb.MaxAhead]
	}
	out := make([]pulpdb.TaskRow, len(at))
	for k, j := range at {
		out[k] = rows[j]
	}
	return out, total
}

// chain lists the holdings in the way of an explained waiting task.
func (v *View) chain(e explain.Explanation, judged []judge.Judgement) []Link {
	var out []Link
	for _, h := range e.TaskLocks {
		if h.Blocks {
			out = append(out, v.link("", judge.KindExclusive, h, judged))
		}
	}
	for _, rn := range e.Resources {
		for _, h := range rn.Holders {
			if h.Blocks {
				out = append(out, v.link(rn.Resource, rn.Need, h, judged))
			}
		}
	}
	return out
}

func (v *View) link(resource string, need judge.Kind, h explain.Holder, judged []judge.Judgement) Link {
	l := Link{Resource: resource, Need: need, Holder: h}
	switch {
	case v.Released(h.Key, h.Owner):
		l.Released, l.FreedAt = true, v.Report.StartedAt
		l.Freed = "released by the pass of " + clock(v.Report.StartedAt)
	case h.Action == judge.ActionRelease && h.Deferred == judge.DeferredMassDeath:
		l.Freed, l.Commands = massDeathFreed(h.Owner)
	case h.Action == judge.ActionRelease && h.Deferred != "":
		l.Freed = "not yet: a pass would release it but " + h.Deferred + " holds it back"
	case h.Action == judge.ActionRelease && v.ReadOnly():
		// `lock-reaper status` releases nothing: no pass of its own is due.
		l.Freed, l.Commands = v.readOnlyFreed("a reaper's pass would release it", h.Owner)
	case h.Action == judge.ActionRelease && !v.NextPass.IsZero():
		l.FreedAt = v.NextPass
		l.Freed = "next pass at " + clock(v.NextPass)
	case h.Action == judge.ActionRelease:
		l.Freed = "at the next pass"
	case h.Action == judge.ActionSuspect:
		first := v.Now()
		for _, jd := range judged {
			if jd.Key == h.Key && jd.Owner == h.Owner && jd.FirstSeen != nil {
				first = *jd.FirstSeen
			}
		}
		l.FreedAt = first.Add(v.In.Policy.ConfirmAfter)
		l.Freed = "after confirmation, at " + clock(l.FreedAt) + " or the first pass after"
		if v.ReadOnly() {
			l.Freed, l.Commands = v.readOnlyFreed("a reaper's pass from "+clock(l.FreedAt)+" would release it once confirmed", h.Owner)
		}
	default:
		l.Freed = "never while its owner lives: " + keptBy(h)
	}
	return l
}

// readOnlyFreed says what ends a block on a read-only page: what a pass
// would do, which reaper passed last and when, and the command that ends
// it now. The inspection's time is on every page.
func (v *View) readOnlyFreed(would, owner string) (string, []Command) {
	return fmt.Sprintf("%s, but nothing releases here (a read-only inspection); last pass: %s; to end it now", would, v.LastPassWords()),
		[]Command{{Line: releaseCommand(owner), Then: "then again without --dry-run"}}
}

// massDeathFreed says what ends a block the mass-death guard holds: no pass
// releases a dead worker's locks until pulpcore deletes the dead rows or
// the pods prove the deaths, or someone who knows says so. The page runs
// nothing, so it names the commands, never "rerun".
func massDeathFreed(owner string) (string, []Command) {
	return "not yet: the mass-death guard holds back every release on dead grounds until pulpcore deletes the dead worker rows or the pods prove the deaths; to end it now",
		massDeathCommands(owner)
}

// massDeathCommands end the mass-death guard's hold: for one worker known
// dead, or for every one when the workers really died.
func massDeathCommands(owner string) []Command {
	return []Command{
		{Line: releaseCommand(owner), Then: "if this worker is dead, then again without --dry-run"},
		{Line: "lock-reaper once --force", Then: "if the workers really died"},
	}
}

// keptForTask is the running task a live (or late) worker keeps the link's
// holding for, if any: the link is freed only when the task ends.
func (l Link) keptForTask() string {
	if l.Released || l.Holder.Action != judge.ActionKeep || l.Holder.Task == nil {
		return ""
	}
	switch l.Holder.Task.State {
	case "running", "canceling":
		return l.Holder.Task.ID
	}
	return ""
}

// keptBy says who keeps a healthy holding and for what.
func keptBy(h explain.Holder) string {
	who := fmt.Sprintf("held by %s worker %s", livenessWord(h.Liveness.String()), h.Owner)
	if h.Task != nil {
		who += " for task " + h.Task.ID
		if h.Task.Name != "" {
			who += " (" + h.Task.Name + ")"
		}
		if h.Task.State != "" {
			who += ", " + h.Task.State
		}
	}
	return who
}

func livenessWord(l string) string {
	if l == "alive" {
		return "live"
	}
	return l
}

// clock writes a time in UTC to the second.
func clock(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }
