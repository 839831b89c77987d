// Package judge decides, for one snapshot of Pulp's locks and tasks, what
// each holding and each incomplete task deserves: the rules of
// docs/verdicts.md as small pure functions. It reads nothing and writes
// nothing; its only clock is the database's, Snapshot.Now.
//
// Each rule is one decision function from the facts of one holding or one
// task (and the policy) to a verdict, in the files named after it:
// task_lock.go, resource.go, lost.go; confirm.go holds the one confirmation
// predicate, guards.go the guards, evidence.go what the report shows.
package judge

import "github.com/lock-reaper/lock-reaper/heartbeat"

// All decides every holding and every incomplete task of a snapshot, with a
// judgement of every holding in the plan.
func All(snap Snapshot, p Policy) Plan {
	return judgeSnapshot(snap, p, true)
}

// Findings decides as All does, but the plan lists only the holdings a pass
// reports: those that are neither healthy nor justified. The others are only
// counted (Plan.ByVerdict, Plan.LockOwners): a judgement of each of a few
// hundred thousand healthy locks would be most of a pass's memory.
func Findings(snap Snapshot, p Policy) Plan {
	return judgeSnapshot(snap, p, false)
}

func judgeSnapshot(snap Snapshot, p Policy, listAll bool) Plan {
	return (&judge{snap: snap, p: p, listAll: listAll, fleet: FleetOf(snap, p)}).run()
}

// judge is one judging of one snapshot: the snapshot, and what its rules
// look up and remember on the way.
type judge struct {
	snap  Snapshot
	p     Policy
	fleet *heartbeat.Fleet
	// listAll keeps a judgement of every holding in the plan, not only of
	// the findings.
	listAll bool
	// suspects is what to remember after this pass.
	suspects map[SuspectKey]Suspect
	// resources finds the resource holdings a task reserves; reservedBy
	// names, for each (by position in the snapshot), the task locks whose
	// tasks reserve it.
	resources  resourceIndex
	reservedBy []reservedBy
	// opaque names the owners holding a kept task lock whose task row the
	// snapshot lacks (an immediate task's row not committed yet): what that
	// task reserves is unknown, so a shared membership of the owner may be
	// its own.
	opaque map[string]bool
	owners ownerCache
	// held is what the snapshot holds of each task's lock, gathered in the
	// walk of the task locks.
	held map[string]taskLocksHeld
	// unheld names the running tasks whose task lock's owner lacks a
	// resource lock the task reserves, gathered in the same walk (nothing
	// in a healthy fleet).
	unheld map[string]bool
	// rowReserved is what running tasks of live claims reserve when their
	// claim's worker does not hold their task lock, gathered with the task
	// verdicts (see reservingRow).
	rowReserved map[holdingKey]string
	// counts of every holding judged, listed or not.
	byVerdict map[Verdict]int
	byOwner   map[string]int
}

// run walks the snapshot: the task locks, then the tasks (which look up
// their task locks), then the resource holdings (which inherit from or are
// justified by the task locks, or by a running task's row); then the
// guards, which cut what the plan lists in the order of sortJudgements.
func (j *judge) run() Plan {
	j.suspects, j.byVerdict, j.byOwner = map[SuspectKey]Suspect{}, map[Verdict]int{}, map[string]int{}
	j.owners = ownerCache{records: map[string]*ownerRecord{}, facts: map[judgedFacts]*judgedFacts{}}
	var taskLocks int
	j.resources, taskLocks = newResourceIndex(j.snap.Holdings)
	j.opaque, j.reservedBy = map[string]bool{}, make([]reservedBy, len(j.snap.Holdings))
	j.held, j.unheld = make(map[string]taskLocksHeld, taskLocks), map[string]bool{}
	plan := Plan{Now: j.snap.Now, FleetOwners: j.fleet.Owners()}
	plan.Holdings = make([]Judgement, 0, j.expectedListed())
	for i := range j.snap.Holdings {
		if j.snap.Holdings[i].Kind == KindTask {
			j.judgeTaskLock(&plan.Holdings, i)
		}
	}
	// Each index goes once its walk is over, before the next list is
	// made: a dead worker's hundred thousand tasks make them megabytes at
	// the judge's peak.
	j.resources = resourceIndex{}
	plan.Tasks = j.taskJudgements()
	j.held, j.unheld = nil, nil
	for i := range j.snap.Holdings {
		if j.snap.Holdings[i].Kind != KindTask {
			j.add(&plan.Holdings, j.resourceJudgement(i))
		}
	}
	sortJudgements(plan.Holdings)

	plan.ByVerdict, plan.LockOwners, plan.Suspects = j.byVerdict, j.lockOwners(), j.suspects
	j.carryUnobservedSuspects(&plan)
	applyGuards(&plan, j.fleet, j.snap.SeenAlive, j.p)
	plan.Guards = append(plan.Guards, motionGuards(j.snap.Motion)...)
	plan.SeenAlive = RememberAlive(j.fleet.WorkerRows(), j.snap.SeenAlive, j.snap.Now, MassDeathWindow, j.p.Force)
	return plan
}

// judgeTaskLock judges the task lock at position at of the snapshot and
// offers its task's reservations to the resource holdings.
func (j *judge) judgeTaskLock(listed *[]Judgement, at int) {
	h := &j.snap.Holdings[at]
	id := h.TaskID()
	t, found := j.snap.Tasks[id]
	j.held[id] = taskLocksHeld{count: j.held[id].count + 1, last: int32(at)}
	jd := j.confirm(j.taskLockJudgement(h, t, found))
	released := jd.Action == ActionRelease
	if !found && !released {
		j.opaque[h.Owner] = true
	}
	j.add(listed, jd)
	for _, entry := range t.Reserved {
		r := ParseReservation(entry)
		if res, ok := j.resources.find(j.snap.Holdings, h.Owner, r); ok {
			j.reservedBy[res].offer(j.snap.Holdings, at, released)
		} else if t.State == StateRunning && !j.resources.holds(j.snap.Holdings, h.Owner, r) {
			j.unheld[id] = true
		}
		if len(j.resources.more) > 0 {
			for _, res := range j.resources.more[holdingKey{h.Owner, r.Resource, r.Kind}] {
				j.reservedBy[res].offer(j.snap.Holdings, at, released)
			}
		}
	}
}

// expectedListed is how many judgements the plan will likely list, so that
// the list is made once at its size: every holding, or the findings. When
// one worker dies holding everything, or a live one never released the
// locks of the tasks it finished, a list grown by appending would hold its
// last two copies at once at the peak of a pass, which took a dead owner's
// audit over the chart's memory limit (docs/benchmarks-history.md has the figures).
//
// The holdings of owners not alive are nearly all findings. Of a live
// owner's, the task locks whose task row is missing or final are, and about
// as large a part of its resource holdings, which inherit those locks'
// verdicts; a few more findings of live owners (unclaimed locks, late
// claims) are allowed for.
func (j *judge) expectedListed() int {
	if j.listAll {
		return len(j.snap.Holdings)
	}
	// live tallies the holdings of each live owner (nil for an owner not
	// alive).
	type tally struct{ taskLocks, stale, resources int }
	live := map[string]*tally{}
	n, rest := 0, 0
	for i := range j.snap.Holdings {
		h := &j.snap.Holdings[i]
		o, seen := live[h.Owner]
		if !seen {
			if j.record(h.Owner).liveness == heartbeat.Alive {
				o = &tally{}
			}
			live[h.Owner] = o
		}
		switch {
		case o == nil:
			n++
		case h.Kind != KindTask:
			o.resources++
		default:
			o.taskLocks++
			if t, found := j.snap.Tasks[h.TaskID()]; !found || Final(t.State) {
				o.stale++
			}
		}
	}
	for _, o := range live {
		if o == nil {
			continue
		}
		stale := o.stale
		if o.taskLocks > 0 {
			stale += int(int64(o.resources) * int64(o.stale) / int64(o.taskLocks))
		}
		n += stale
		rest += o.taskLocks + o.resources - stale
	}
	return n + rest/32
}

// lists says the plan lists judgements with verdict v: every one, or the
// findings.
func (j *judge) lists(v Verdict) bool { return j.listAll || v.Finding() }

// add counts a judgement and adds it to listed when the plan lists it.
func (j *judge) add(listed *[]Judgement, jd Judgement) {
	j.byVerdict[jd.Verdict]++
	j.byOwner[jd.Owner]++
	if j.lists(jd.Verdict) {
		*listed = append(*listed, jd)
	}
}
