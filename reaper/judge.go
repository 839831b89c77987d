package reaper

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// immediateOwnerPrefix marks an owner name that stands for one immediate task
// rather than a process: immediate-<task-uuid>.
const immediateOwnerPrefix = "immediate-"

// Judge decides every holding and every incomplete task of a snapshot. It is
// pure: no I/O, no clock but snap.Now.
func Judge(snap Snapshot, p Policy) Plan {
	j := judge{snap: snap, p: p, fleet: heartbeat.Judge(snap.AppStatuses, snap.Now, p.HeartbeatGrace)}
	return j.run()
}

type judge struct {
	snap  Snapshot
	p     Policy
	fleet *heartbeat.Fleet
	// opaque names the owners holding a kept task lock whose task row the
	// snapshot lacks (an immediate task's row not committed yet): what that
	// task reserves is unknown, so a shared membership of the owner may be
	// its own.
	opaque map[string]bool
}

func (j *judge) run() Plan {
	holdings := append([]Holding(nil), j.snap.Holdings...)
	sortHoldings(holdings)

	var tasks, resources []Holding
	for _, h := range holdings {
		if h.Kind == KindTask {
			tasks = append(tasks, h)
		} else {
			resources = append(resources, h)
		}
	}
	plan := Plan{Now: j.snap.Now, Owners: j.fleet.Owners(), Suspects: map[SuspectKey]Suspect{}}
	for _, h := range tasks {
		plan.Holdings = append(plan.Holdings, j.confirm(j.taskLock(h), &plan))
	}
	index := indexTaskLocks(plan.Holdings, j.snap.Tasks)
	j.opaque = opaqueOwners(plan.Holdings, j.snap.Tasks)
	for _, h := range resources {
		plan.Holdings = append(plan.Holdings, j.resource(h, index, &plan))
	}
	plan.Tasks = j.lostTasks(tasks, &plan)
	j.carryUnobservedSuspects(&plan)
	applyGuards(&plan, j.fleet, j.p)
	return plan
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

func immediateTaskID(owner string) (string, bool) {
	id, ok := strings.CutPrefix(owner, immediateOwnerPrefix)
	if !ok || !IsTaskUUID(id) {
		return "", false
	}
	return id, true
}

func (j *judge) ownerEvidence(name string) Evidence {
	o := j.owner(name)
	e := Evidence{OwnerLiveness: o.Liveness}
	if o.Rows > 0 {
		e.HeartbeatAge = durationPtr(o.HeartbeatAge)
	}
	return e
}

// taskLock applies the task lock table of verdicts.md; the first matching row decides.
func (j *judge) taskLock(h Holding) Judgement {
	e := j.ownerEvidence(h.Owner)
	t, found := j.snap.Tasks[h.TaskID]
	var claim *heartbeat.AppStatus
	var claimLive heartbeat.Liveness
	if found {
		e.TaskState = t.State
		if t.FinishedAt != nil {
			e.FinishedAge = durationPtr(j.snap.Now.Sub(*t.FinishedAt))
		}
		if row, live, ok := j.fleet.Row(t.AppLockID); ok {
			claim, claimLive = &row, live
			e.AppLock, e.AppLockLiveness = row.Name, &live
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
	case h.Owner == immediateOwnerPrefix+t.ID:
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
func (j *judge) confirm(jd Judgement, plan *Plan) Judgement {
	if !jd.Verdict.needsConfirmation() {
		return jd
	}
	key := SuspectKey{Key: jd.Key, Owner: jd.Owner}
	s := j.remember(key, jd.Verdict, plan)
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
func (j *judge) remember(key SuspectKey, v Verdict, plan *Plan) Suspect {
	s, ok := j.snap.Suspects[key]
	if !ok || s.Verdict != v || s.FirstSeen.After(j.snap.Now) {
		s = Suspect{Verdict: v, FirstSeen: j.snap.Now}
	}
	plan.Suspects[key] = s
	return s
}

// carryUnobservedSuspects keeps suspects a registry-only pass could not see:
// only a full scan proves a legacy lock is gone. A suspect whose holding this
// pass did see, with whatever verdict, is settled by that sighting.
func (j *judge) carryUnobservedSuspects(plan *Plan) {
	if j.snap.FullScan {
		return
	}
	observed := make(map[SuspectKey]bool, len(j.snap.Holdings))
	for _, h := range j.snap.Holdings {
		observed[SuspectKey{Key: h.Key, Owner: h.Owner}] = true
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

// ownedReservation is a resource of a given kind held or reserved by an owner.
type ownedReservation struct {
	owner string
	reservation
}

// taskLockIndex says, for each resource an owner's task locks reserve, which
// kept task lock justifies a holding of it and which released one it inherits
// from: indexes into plan.Holdings, -1 for none. One lookup per resource
// holding keeps judging linear in the number of holdings.
type taskLockIndex map[ownedReservation]*reservedBy

type reservedBy struct{ kept, released int }

func indexTaskLocks(judged []Judgement, tasks map[string]Task) taskLockIndex {
	idx := taskLockIndex{}
	for i, jd := range judged {
		t, ok := tasks[jd.TaskID]
		if !ok {
			continue
		}
		for _, entry := range t.Reserved {
			r := ownedReservation{jd.Owner, parseReservation(entry)}
			by := idx[r]
			if by == nil {
				by = &reservedBy{kept: -1, released: -1}
				idx[r] = by
			}
			switch {
			case jd.Action != ActionRelease && by.kept < 0:
				by.kept = i
			case jd.Action == ActionRelease && by.released < 0:
				by.released = i
			}
		}
	}
	return idx
}

// opaqueOwners lists the owners of kept task locks without a task row.
func opaqueOwners(judged []Judgement, tasks map[string]Task) map[string]bool {
	out := map[string]bool{}
	for _, jd := range judged {
		if _, ok := tasks[jd.TaskID]; !ok && jd.Action != ActionRelease {
			out[jd.Owner] = true
		}
	}
	return out
}

// resource applies the resource holding table of verdicts.md.
// An inherited verdict carries its task lock's action: a confirmed task lock
// releases its resources in the same pass, without a confirmation of their own.
func (j *judge) resource(h Holding, idx taskLockIndex, plan *Plan) Judgement {
	e := j.ownerEvidence(h.Owner)
	by := idx[ownedReservation{h.Owner, reservation{h.Resource, h.Kind}}]
	switch {
	case by != nil && by.kept >= 0:
		// A task lock kept this pass, or a suspect not yet confirmed,
		// justifies the holding.
		tl := plan.Holdings[by.kept]
		e.Via, e.TaskState = tl.Key, tl.Evidence.TaskState
		return Judgement{Holding: h, Verdict: VerdictJustified, Action: ActionKeep, Evidence: e}
	case by != nil && by.released >= 0 && !(h.Kind == KindShared && j.opaque[h.Owner]):
		// A shared membership is one set member for every task of its owner
		// on that resource, so while the owner also holds a kept task lock
		// whose reservations are unknown, it may be that task's too: it is
		// then judged below like a holding no task explains, released only
		// once confirmed, as the unknown task's own resources are. An
		// exclusive lock was taken together with the released task lock
		// that reserves it, and is that task's alone.
		tl := plan.Holdings[by.released]
		e.Via, e.TaskState = tl.Key, tl.Evidence.TaskState
		e.FinishedAge, e.AppLock, e.AppLockLiveness = tl.Evidence.FinishedAge, tl.Evidence.AppLock, tl.Evidence.AppLockLiveness
		return Judgement{Holding: h, Verdict: tl.Verdict, Action: ActionRelease, Evidence: e}
	case e.OwnerLiveness == heartbeat.Dead:
		return Judgement{Holding: h, Verdict: VerdictOwnerDead, Action: ActionRelease, Evidence: e}
	case e.OwnerLiveness == heartbeat.Gone:
		return Judgement{Holding: h, Verdict: VerdictOwnerGone, Action: ActionRelease, Evidence: e}
	default:
		return j.confirm(Judgement{Holding: h, Verdict: VerdictNoTask, Action: ActionSuspect, Evidence: e}, plan)
	}
}

// lostTasks applies the lost task table of verdicts.md to every incomplete
// task of the snapshot.
func (j *judge) lostTasks(taskLocks []Holding, plan *Plan) []TaskJudgement {
	locked := map[string][]string{}
	lockOwner := map[string]string{}
	for _, h := range taskLocks {
		locked[h.TaskID] = append(locked[h.TaskID], h.Key)
		lockOwner[h.TaskID] = h.Owner
	}
	ids := make([]string, 0, len(j.snap.Tasks))
	for id := range j.snap.Tasks {
		ids = append(ids, id)
	}
	sort.Strings(ids)

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
				s := j.remember(stuckClaimKey(id, t.AppLockID), VerdictStuckClaim, plan)
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
		out = append(out, tj)
	}
	return out
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

// sortHoldings orders holdings so that every pass handles them in the same
// order: task locks first, then by key and owner.
func sortHoldings(hs []Holding) {
	sort.Slice(hs, func(a, b int) bool {
		if (hs[a].Kind == KindTask) != (hs[b].Kind == KindTask) {
			return hs[a].Kind == KindTask
		}
		if hs[a].Key != hs[b].Key {
			return hs[a].Key < hs[b].Key
		}
		return hs[a].Owner < hs[b].Owner
	})
}

func formatSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}
