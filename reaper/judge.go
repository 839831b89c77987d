package reaper

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// immediateOwnerPrefix marks an owner name that stands for one immediate task
// rather than a process: immediate-<task-uuid>.
const immediateOwnerPrefix = "immediate-"

// Judge decides every holding and every incomplete task of a snapshot, with a
// judgement of every holding in the plan. It is pure: no I/O, no clock but
// snap.Now.
func Judge(snap Snapshot, p Policy) Plan {
	return judgeSnapshot(snap, p, true)
}

// JudgeFindings decides as Judge does, but the plan lists only the holdings a
// pass reports: those that are neither healthy nor justified. The others are
// only counted (Plan.ByVerdict, Plan.Holders): a judgement of each of a few
// hundred thousand healthy locks would be most of a pass's memory.
func JudgeFindings(snap Snapshot, p Policy) Plan {
	return judgeSnapshot(snap, p, false)
}

func judgeSnapshot(snap Snapshot, p Policy, listAll bool) Plan {
	j := judge{snap: snap, p: p, listAll: listAll, fleet: fleetOf(snap, p)}
	return j.run()
}

type judge struct {
	snap  Snapshot
	p     Policy
	fleet *heartbeat.Fleet
	// listAll keeps a judgement of every holding in the plan, not only of
	// those that are neither healthy nor justified.
	listAll bool
	// opaque names the owners holding a kept task lock whose task row the
	// snapshot lacks (an immediate task's row not committed yet): what that
	// task reserves is unknown, so a shared membership of the owner may be
	// its own.
	opaque map[string]bool
	// evidence holds each owner's part of the evidence, which all its
	// holdings share (with one heartbeat age), filled as owners are met.
	evidence map[string]Evidence
	// livenesses are what AppLockLiveness points to, one per value, so that
	// a hundred thousand task locks do not each allocate one.
	livenesses *[4]heartbeat.Liveness
}

func (j *judge) run() Plan {
	tasks, resources := sortedHoldings(j.snap.Holdings)
	plan := Plan{Now: j.snap.Now, Owners: j.fleet.Owners(), Suspects: map[SuspectKey]Suspect{}}
	var all []Judgement
	if j.listAll && len(j.snap.Holdings) > 0 {
		all = make([]Judgement, len(j.snap.Holdings))
	}
	counts := newPart()
	taskLocks := make([]judgedTaskLock, len(tasks))
	taskLockOf := func(w *judge, n int, suspects map[SuspectKey]Suspect) (Judgement, bool) {
		h := w.snap.Holdings[tasks[n]]
		t, found := w.snap.Tasks[h.TaskID()]
		return w.confirm(w.taskLock(h, t, found), suspects), found
	}
	judgeTaskLock := func(w *judge, n int, suspects map[SuspectKey]Suspect) Judgement {
		jd, _ := taskLockOf(w, n, suspects)
		return jd
	}
	var allTasks, allResources []Judgement
	if all != nil {
		allTasks, allResources = all[:len(tasks)], all[len(tasks):]
	}
	listedTasks := j.inParts(len(tasks), &plan, counts, func(w *judge, pt *part, lo, hi int) {
		for n := lo; n < hi; n++ {
			jd, found := taskLockOf(w, n, pt.suspects)
			taskLocks[n] = judgedTaskLock{at: tasks[n], released: jd.Action == ActionRelease, missing: !found}
			w.add(pt, allTasks, n, jd)
		}
	})
	reservedBy := j.reservations(tasks, resources, taskLocks)
	j.opaque = map[string]bool{}
	for _, tl := range taskLocks {
		if tl.missing && !tl.released {
			j.opaque[j.snap.Holdings[tl.at].Owner] = true
		}
	}
	// The lost tasks depend on the task locks alone: they are judged while
	// the resource holdings are.
	lost := map[SuspectKey]Suspect{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		plan.Tasks = j.lostTasks(taskLocks, lost)
	}()
	judgeResource := func(w *judge, n int, suspects map[SuspectKey]Suspect) Judgement {
		kept, released := reservedBy[n].get()
		return w.resource(w.snap.Holdings[resources[n]], kept, released, taskLocks, suspects)
	}
	listedResources := j.inParts(len(resources), &plan, counts, func(w *judge, pt *part, lo, hi int) {
		for n := lo; n < hi; n++ {
			w.add(pt, allResources, n, judgeResource(w, n, pt.suspects))
		}
	})
	<-done
	if all != nil {
		plan.Holdings = all
	} else if n := len(listedTasks) + len(listedResources); n > 0 {
		plan.Holdings = make([]Judgement, n)
		j.fill(plan.Holdings[:len(listedTasks)], listedTasks, judgeTaskLock)
		j.fill(plan.Holdings[len(listedTasks):], listedResources, judgeResource)
	}
	maps.Copy(plan.Suspects, lost)
	plan.ByVerdict = counts.byVerdict
	plan.Holders = j.holders(counts.byOwner)
	j.carryUnobservedSuspects(&plan)
	applyGuards(&plan, j.fleet, j.p)
	plan.TaskLocksSeen = taskLocksSeen(j.snap.Holdings, plan.Holdings)
	return plan
}

// holders reports each owner of a holding, by name.
func (j *judge) holders(byOwner map[string]int) []OwnerReport {
	names := slices.Sorted(maps.Keys(byOwner))
	out := make([]OwnerReport, len(names))
	for i, name := range names {
		e := j.ownerEvidence(name)
		out[i] = OwnerReport{Name: name, Liveness: e.OwnerLiveness.String(), HeartbeatAge: e.HeartbeatAge, Holdings: byOwner[name], Kubernetes: e.Kubernetes}
	}
	return out
}

// taskLocksSeen lists the task lock keys the snapshot saw each owner hold,
// for the owners with a guarded release in listed: the release script checks
// that such an owner took no other task lock since.
func taskLocksSeen(holdings []Holding, listed []Judgement) map[string][]string {
	seen := map[string][]string{}
	for _, jd := range listed {
		if jd.Action == ActionRelease && guarded(jd) {
			seen[jd.Owner] = []string{}
		}
	}
	if len(seen) == 0 {
		return seen
	}
	for _, h := range holdings {
		if keys, want := seen[h.Owner]; want && h.Kind == KindTask {
			seen[h.Owner] = append(keys, h.Key)
		}
	}
	// The release script counts the keys: each must be listed once.
	for owner, keys := range seen {
		slices.Sort(keys)
		seen[owner] = slices.Compact(keys)
	}
	return seen
}

// owner returns the liveness of a lock owner. An immediate-<uuid> owner is a
// task, not a process: alive while that task is incomplete, gone once it is
// final. While its row is not visible (the dispatching transaction may not
// have committed) it counts as alive, so only confirmed verdicts can apply.
func (j *judge) owner(name string) heartbeat.Owner {
	if id, ok := immediateTaskID(name); ok {
		if t, found := j.snap.Tasks[id]; found && Final(t.State) {
			return heartbeat.Owner{Name: name, Liveness: heartbeat.Gone}
		}
		return heartbeat.Owner{Name: name, Liveness: heartbeat.Alive}
	}
	return j.fleet.Owner(name)
}

// isImmediateOwnerOf says owner is immediate-<taskID>, without building the
// name for each of a hundred thousand task locks.
func isImmediateOwnerOf(owner, taskID string) bool {
	id, ok := strings.CutPrefix(owner, immediateOwnerPrefix)
	return ok && id == taskID
}

func immediateTaskID(owner string) (string, bool) {
	id, ok := strings.CutPrefix(owner, immediateOwnerPrefix)
	if !ok || !IsTaskUUID(id) {
		return "", false
	}
	return id, true
}

func (j *judge) ownerEvidence(name string) Evidence {
	if e, ok := j.evidence[name]; ok {
		return e
	}
	o := j.owner(name)
	e := Evidence{OwnerLiveness: o.Liveness, Kubernetes: o.Kubernetes}
	if o.Rows > 0 {
		e.HeartbeatAge = durationPtr(o.HeartbeatAge)
	}
	if j.evidence == nil {
		j.evidence = map[string]Evidence{}
	}
	j.evidence[name] = e
	return e
}

// liveness returns a pointer to l that the judgements of one plan share.
func (j *judge) liveness(l heartbeat.Liveness) *heartbeat.Liveness {
	if l < 0 || int(l) >= len(j.livenesses) {
		odd := l
		return &odd
	}
	if j.livenesses == nil {
		j.livenesses = &[4]heartbeat.Liveness{heartbeat.Gone, heartbeat.Dead, heartbeat.Late, heartbeat.Alive}
	}
	return &j.livenesses[l]
}

// taskLock applies the task lock table of verdicts.md; the first matching row decides.
// t is the lock's task, when found.
func (j *judge) taskLock(h Holding, t Task, found bool) Judgement {
	e := j.ownerEvidence(h.Owner)
	var claim *heartbeat.AppStatus
	var claimLive heartbeat.Liveness
	if found {
		e.TaskState = t.State
		if t.FinishedAt != nil {
			e.FinishedAge = durationPtr(j.snap.Now.Sub(*t.FinishedAt))
		}
		if row, live, ok := j.fleet.Row(t.AppLockID); ok {
			claim, claimLive = &row, live
			e.AppLock, e.AppLockLiveness = row.Name, j.liveness(live)
		}
	}
	verdict := func(v Verdict, a Action) Judgement { return Judgement{Holding: h, Verdict: v, Action: a, Evidence: e} }
	final := found && Final(t.State)
	switch {
	case final && (t.FinishedAt == nil || j.snap.Now.Sub(*t.FinishedAt) > j.p.FinishedGrace):
		return verdict(VerdictTaskFinished, ActionRelease)
	case final || e.OwnerLiveness == heartbeat.Late:
		return verdict(VerdictPending, ActionKeep)
	case e.OwnerLiveness == heartbeat.Dead:
		return verdict(VerdictOwnerDead, ActionRelease)
	case e.OwnerLiveness == heartbeat.Gone:
		return verdict(VerdictOwnerGone, ActionRelease)
	case !found:
		return verdict(VerdictTaskMissing, ActionSuspect)
	case isImmediateOwnerOf(h.Owner, t.ID):
		return verdict(VerdictHealthy, ActionKeep)
	case claim != nil && claim.Name == h.Owner && claimLive == heartbeat.Alive:
		return verdict(VerdictHealthy, ActionKeep)
	case claim != nil && claim.Name == h.Owner && claimLive == heartbeat.Late:
		return verdict(VerdictPending, ActionKeep)
	case claim != nil && claim.Name == h.Owner:
		return verdict(VerdictTaskLost, ActionRelease)
	default:
		return verdict(VerdictUnclaimed, ActionSuspect)
	}
}

// confirm turns a finding that needs confirmation into a release once the
// same holding has carried the same verdict for ConfirmAfter, and records
// what to remember otherwise.
func (j *judge) confirm(jd Judgement, suspects map[SuspectKey]Suspect) Judgement {
	if !jd.Verdict.needsConfirmation() {
		return jd
	}
	key := SuspectKey{Key: jd.Key, Owner: jd.Owner}
	s := j.remember(key, jd.Verdict, suspects)
	jd.FirstSeen = &s.FirstSeen
	if j.snap.Now.Sub(s.FirstSeen) >= j.p.ConfirmAfter && s.FirstSeen.Before(j.snap.Now) {
		jd.Action = ActionRelease
	} else {
		jd.Action = ActionSuspect
	}
	return jd
}

// remember keeps the first sighting of a suspect with the same verdict and
// starts a new one otherwise.
func (j *judge) remember(key SuspectKey, v Verdict, suspects map[SuspectKey]Suspect) Suspect {
	s, ok := j.snap.Suspects[key]
	if !ok || s.Verdict != v || s.FirstSeen.After(j.snap.Now) {
		s = Suspect{Verdict: v, FirstSeen: j.snap.Now}
	}
	suspects[key] = s
	return s
}

// carryUnobservedSuspects keeps suspects a registry-only pass could not see:
// only a full scan proves a legacy lock is gone. A suspect whose holding this
// pass did see, with whatever verdict, is settled by that sighting.
func (j *judge) carryUnobservedSuspects(plan *Plan) {
	if j.snap.FullScan {
		return
	}
	observed := map[SuspectKey]bool{}
	for _, h := range j.snap.Holdings {
		if len(j.snap.Suspects) == 0 {
			break
		}
		k := SuspectKey{Key: h.Key, Owner: h.Owner}
		if _, remembered := j.snap.Suspects[k]; remembered {
			observed[k] = true
		}
	}
	for k, s := range j.snap.Suspects {
		if _, seen := plan.Suspects[k]; !seen && !observed[k] {
			plan.Suspects[k] = s
		}
	}
}

// reservation is one resource a task reserved, with its kind.
type reservation struct {
	resource string
	kind     Kind
}

// parseReservation reads one entry of a reserved_resources_record: shared
// resources carry the shared: prefix.
func parseReservation(r string) reservation {
	if name, ok := strings.CutPrefix(r, "shared:"); ok {
		return reservation{name, KindShared}
	}
	return reservation{r, KindExclusive}
}

// resource applies the resource holding table of verdicts.md.
// An inherited verdict carries its task lock's action: a confirmed task lock
// releases its resources in the same pass, without a confirmation of their own.
// kept and released are positions among taskLocks (-1 for none); suspects
// are remembered in suspects.
func (j *judge) resource(h Holding, kept, released int32, taskLocks []judgedTaskLock, suspects map[SuspectKey]Suspect) Judgement {
	e := j.ownerEvidence(h.Owner)
	switch {
	case kept >= 0:
		// A task lock kept this pass, or a suspect not yet confirmed,
		// justifies the holding. Only a plan that lists every holding lists
		// this one, and tells the task's state.
		tl := j.snap.Holdings[taskLocks[kept].at]
		e.Via = tl.Key
		if j.listAll {
			e.TaskState = j.snap.Tasks[tl.TaskID()].State
		}
		return Judgement{Holding: h, Verdict: VerdictJustified, Action: ActionKeep, Evidence: e}
	case released >= 0 && !(h.Kind == KindShared && j.opaque[h.Owner]):
		// A shared membership is one set member for every task of its owner
		// on that resource, so while the owner also holds a kept task lock
		// whose reservations are unknown, it may be that task's too: it is
		// then judged below like a holding no task explains, released only
		// once confirmed, as the unknown task's own resources are. An
		// exclusive lock was taken together with the released task lock
		// that reserves it, and is that task's alone. The task lock's
		// verdict and evidence are judged again: a confirmation changes
		// only its action.
		h2 := j.snap.Holdings[taskLocks[released].at]
		t, found := j.snap.Tasks[h2.TaskID()]
		tl := j.taskLock(h2, t, found)
		e.Via, e.TaskState = tl.Key, tl.Evidence.TaskState
		e.FinishedAge, e.AppLock, e.AppLockLiveness = tl.Evidence.FinishedAge, tl.Evidence.AppLock, tl.Evidence.AppLockLiveness
		return Judgement{Holding: h, Verdict: tl.Verdict, Action: ActionRelease, Evidence: e}
	case e.OwnerLiveness == heartbeat.Dead:
		return Judgement{Holding: h, Verdict: VerdictOwnerDead, Action: ActionRelease, Evidence: e}
	case e.OwnerLiveness == heartbeat.Gone:
		return Judgement{Holding: h, Verdict: VerdictOwnerGone, Action: ActionRelease, Evidence: e}
	default:
		jd := j.confirm(Judgement{Holding: h, Verdict: VerdictNoTask, Action: ActionSuspect, Evidence: e}, suspects)
		if jd.Action == ActionRelease && h.Kind == KindShared && j.opaque[h.Owner] {
			// The suspect may predate the invisible task that now shares
			// this membership: wait until that task lock is settled, so a
			// confirmation never outlives the reason it was raised for.
			jd.Action = ActionSuspect
		}
		return jd
	}
}

// lostTasks applies the lost task table of verdicts.md to every incomplete
// task of the snapshot.
func (j *judge) lostTasks(taskLocks []judgedTaskLock, suspects map[SuspectKey]Suspect) []TaskJudgement {
	// Most tasks of a snapshot run under a live claim; only the others are
	// sorted and looked up among the task locks.
	var ids []string
	for id, t := range j.snap.Tasks {
		if j.mayBeLost(t) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	sort.Strings(ids)
	locked := make(map[string][]string, len(ids))
	lockOwner := make(map[string]string, len(ids))
	for _, id := range ids {
		locked[id] = nil
	}
	for _, tl := range taskLocks {
		h := &j.snap.Holdings[tl.at]
		if keys, want := locked[h.TaskID()]; want {
			locked[h.TaskID()] = append(keys, h.Key)
			lockOwner[h.TaskID()] = h.Owner
		}
	}

	var out []TaskJudgement
	for _, id := range ids {
		t := j.snap.Tasks[id]
		row, live, claimed := j.fleet.Row(t.AppLockID)
		owner := row.Name
		if owner == "" {
			owner = lockOwner[id]
		}
		tj := TaskJudgement{ID: id, Name: t.Name, StateBefore: t.State, AppLockID: t.AppLockID, Owner: owner, Action: ActionUpdate}
		switch t.State {
		case StateRunning, StateCanceling:
			// A running task with no claim lost its worker's row; a claim
			// whose row is missing or dead lost its worker.
			if t.AppLockID != "" && claimed && live != heartbeat.Dead {
				continue
			}
			// pulpcore runs an immediate task with no AppStatus in the
			// dispatching process under immediate-<T> and app_lock NULL: that
			// owner is alive while the task is incomplete, so the task is not lost.
			if t.AppLockID == "" && lockOwner[id] == immediateOwnerPrefix+id {
				continue
			}
			tj.Verdict = VerdictLost
			tj.StateAfter = StateCanceled
			if t.State == StateRunning {
				tj.StateAfter = j.p.LostRunning
			}
			tj.Reason = lostReason(owner, tj.StateAfter)
		case StateWaiting:
			switch {
			case t.AppLockID == "":
				continue
			case !claimed || live == heartbeat.Dead:
				tj.Verdict = VerdictOrphanedClaim
				tj.AfterRelease = locked[id]
				if j.p.OrphanedWaiting == WaitingCancel {
					tj.StateAfter, tj.Reason = StateCanceled, lostReason(owner, StateCanceled)
				} else {
					tj.StateAfter, tj.ClearClaim = StateWaiting, true
				}
			case live == heartbeat.Alive && j.snap.FullScan && len(locked[id]) == 0:
				tj.Verdict = VerdictStuckClaim
				tj.StateAfter, tj.ClearClaim = StateWaiting, true
				s := j.remember(stuckClaimKey(id, t.AppLockID), VerdictStuckClaim, suspects)
				tj.FirstSeen = &s.FirstSeen
				if j.snap.Now.Sub(s.FirstSeen) < j.p.ConfirmAfter || !s.FirstSeen.Before(j.snap.Now) {
					tj.Action = ActionSuspect
				}
			default:
				continue
			}
		default:
			continue
		}
		if out == nil {
			out = make([]TaskJudgement, 0, len(ids))
		}
		out = append(out, tj)
	}
	return out
}

// mayBeLost says whether a task can get a verdict of the lost task table,
// judging only by its state and its claim: the rows below also look at its
// task locks.
func (j *judge) mayBeLost(t Task) bool {
	_, live, claimed := j.fleet.Row(t.AppLockID)
	switch t.State {
	case StateRunning, StateCanceling:
		return t.AppLockID == "" || !claimed || live == heartbeat.Dead
	case StateWaiting:
		return t.AppLockID != "" && (!claimed || live == heartbeat.Dead || (live == heartbeat.Alive && j.snap.FullScan))
	}
	return false
}

// stuckClaimKey names a stuck claim among the suspects: no lock key starts
// with "stuck-claim:", so it cannot collide with a holding.
func stuckClaimKey(taskID, appLockID string) SuspectKey {
	return SuspectKey{Key: "stuck-claim:" + taskID, Owner: appLockID}
}

func lostReason(owner, stateAfter string) string {
	if owner == "" {
		owner = "(unknown)"
	}
	return fmt.Sprintf("Worker %s has gone missing; lock reaper %s.", owner, stateAfter)
}

// applyGuards holds back what the mass-death guard and the per-pass limits
// forbid. Held-back work is reported as deferred and waits for the next pass.
func applyGuards(plan *Plan, fleet *heartbeat.Fleet, p Policy) {
	workers, dead := fleet.WorkerCounts()
	massDeath := !p.Force && workers > 0 && workers >= p.MinWorkers && float64(dead)/float64(workers) > p.MaxDeadFraction
	if massDeath {
		reason := fmt.Sprintf("%d of %d worker rows are dead (more than max_dead_fraction %s): a database too slow to record heartbeats looks like a dead fleet; nothing is released on dead grounds and no task is updated; rerun with --force if the workers really died",
			dead, workers, strconv.FormatFloat(p.MaxDeadFraction, 'f', -1, 64))
		plan.Guards = append(plan.Guards, Guard{Name: "mass-death", Reason: reason})
		for i := range plan.Holdings {
			if jd := &plan.Holdings[i]; jd.Action == ActionRelease && jd.Verdict.onDeadGrounds() {
				jd.Deferred = "mass-death guard"
			}
		}
		for i := range plan.Tasks {
			if plan.Tasks[i].Action == ActionUpdate {
				plan.Tasks[i].Deferred = "mass-death guard"
			}
		}
	}
	released := 0
	for i := range plan.Holdings {
		jd := &plan.Holdings[i]
		if jd.Action != ActionRelease || jd.Deferred != "" {
			continue
		}
		if released++; released > p.MaxReleases {
			jd.Deferred = "max_releases"
		}
	}
	if released > p.MaxReleases {
		plan.Guards = append(plan.Guards, Guard{Name: "max-releases", Reason: fmt.Sprintf("%d holdings to release, at most %d per pass (max_releases): the rest waits for the next pass", released, p.MaxReleases)})
	}
	updated := 0
	for i := range plan.Tasks {
		tj := &plan.Tasks[i]
		if tj.Action != ActionUpdate || tj.Deferred != "" {
			continue
		}
		if updated++; updated > p.MaxTaskUpdates {
			tj.Deferred = "max_task_updates"
		}
	}
	if updated > p.MaxTaskUpdates {
		plan.Guards = append(plan.Guards, Guard{Name: "max-task-updates", Reason: fmt.Sprintf("%d tasks to update, at most %d per pass (max_task_updates): the rest waits for the next pass", updated, p.MaxTaskUpdates)})
	}
}

func formatSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}
