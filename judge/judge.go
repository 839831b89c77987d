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

import (
	"maps"
	"sync"
)

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
	j := &judge{snap: snap, p: p, listAll: listAll, fleet: FleetOf(snap, p)}
	return j.run()
}

// judge is one judging of one snapshot: the snapshot, and what its rules
// look up and remember on the way.
type judge struct {
	snap  Snapshot
	p     Policy
	fleet *Fleet
	// ix is the order the holdings are walked in.
	ix index
	// listAll keeps a judgement of every holding in the plan, not only of
	// the findings.
	listAll bool
	// onePart judges the task locks in one walk, as a test compares.
	onePart bool
	// suspects is what to remember after this pass.
	suspects map[SuspectKey]Suspect
	// opaque names the owners holding a kept task lock whose task row the
	// snapshot lacks (an immediate task's row not committed yet): what that
	// task reserves is unknown, so a shared membership of the owner may be
	// its own.
	opaque map[string]bool
	owners ownerCache
	// rowReserved is what running tasks of live claims reserve, gathered
	// when a holding first asks (see reservingRow).
	rowReserved map[rowReservation]string
	// counts of every holding judged, listed or not.
	byVerdict map[Verdict]int
	// byOwner counts holdings by owner number (index.owners).
	byOwner []int
}

// run judges the task locks, then the resource holdings (which inherit from
// or are justified by the task locks), and beside them the tasks; then the
// guards, which cut what the plan lists in the order of CompareHoldings.
func (j *judge) run() Plan {
	j.suspects = map[SuspectKey]Suspect{}
	j.ix = indexOf(j.snap.Holdings)
	j.byVerdict, j.byOwner = map[Verdict]int{}, make([]int, len(j.ix.owners))
	j.numberOwners()
	plan := Plan{Now: j.snap.Now, FleetOwners: j.fleet.Owners()}
	if n := j.expectedListed(); n > 0 {
		plan.Holdings = make([]Judgement, 0, n)
	}

	// The tasks need only the snapshot and its order: they are judged beside
	// the holdings, by a part with state of its own.
	tasks := j.tasksPart()
	inParallel(func() {
		plan.Tasks = tasks.taskJudgements()
	}, func() {
		taskLocks := make([]judgedTaskLock, len(j.ix.tasks.placed))
		reserved := j.judgeTaskLocks(&plan.Holdings, taskLocks)
		j.opaque = opaqueOwners(j.snap.Holdings, taskLocks)
		for n, p := range j.ix.resources.placed {
			j.add(&plan.Holdings, j.resourceJudgement(p, reserved[n], taskLocks), p)
		}
		sortJudgements(plan.Holdings)
	})
	maps.Copy(j.suspects, tasks.suspects)

	plan.ByVerdict = j.byVerdict
	plan.LockOwners = j.lockOwners()
	plan.Suspects = j.suspects
	j.carryUnobservedSuspects(&plan)
	applyGuards(&plan, j.fleet, j.snap.SeenAlive, j.p)
	plan.SeenAlive = RememberAlive(j.fleet.WorkerRows(), j.snap.SeenAlive, j.snap.Now, MassDeathWindow, j.p.Force)
	plan.TaskLocksSeen = j.taskLocksSeen(plan.Holdings)
	return plan
}

// expectedListed is how many judgements the plan will likely list, so that
// the list is made once at its size: every holding, or the findings, most of
// which are the holdings of owners not alive. When one worker dies holding
// everything, a list grown by appending would hold its last two copies at
// once: tens of megabytes at the peak of a pass.
func (j *judge) expectedListed() int {
	return j.expectedListedOf(j.ix.tasks.placed) + j.expectedListedOf(j.ix.resources.placed)
}

// expectedListedOf is expectedListed of some of the holdings.
func (j *judge) expectedListedOf(ps []placed) int {
	if j.listAll {
		return len(ps)
	}
	n := 0
	for _, p := range ps {
		if j.owners.numbered[p.owner].OwnerLiveness != Alive {
			n++
		}
	}
	// A few findings of live owners (finished tasks, unclaimed locks).
	return n + (len(ps)-n)/32
}

// lists says the plan lists judgements with verdict v: every one, or the
// findings.
func (j *judge) lists(v Verdict) bool { return j.listAll || v.Finding() }

// add counts a judgement of the holding at p and adds it to listed when
// the plan lists it.
func (j *judge) add(listed *[]Judgement, jd Judgement, p placed) {
	j.byVerdict[jd.Verdict]++
	j.byOwner[p.owner]++
	if j.lists(jd.Verdict) {
		*listed = append(*listed, jd)
	}
}

// judgedTaskLock is what judging the resource holdings and the tasks needs
// of a judged task lock, without keeping a judgement of every one.
type judgedTaskLock struct {
	// at is the task lock's position in the snapshot's holdings.
	at       int32
	released bool
	missing  bool
}

// opaqueOwners names the owners of a kept task lock whose task the snapshot
// lacks.
func opaqueOwners(holdings []Holding, taskLocks []judgedTaskLock) map[string]bool {
	opaque := map[string]bool{}
	for _, tl := range taskLocks {
		if tl.missing && !tl.released {
			opaque[holdings[tl.at].Owner] = true
		}
	}
	return opaque
}

// inParallel runs each part at once and returns when all are done. Each
// part owns what it writes; what they share they only read.
func inParallel(parts ...func()) {
	var wg sync.WaitGroup
	for _, part := range parts[1:] {
		wg.Go(part)
	}
	parts[0]()
	wg.Wait()
}
