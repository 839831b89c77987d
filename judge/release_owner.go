package judge

import (
	"maps"
	"time"
)

// Deferral reasons of a break-glass release.
const (
	DeferredAliveOwner   = "alive-owner guard"
	DeferredOtherTaskKey = "its task lock is held by another owner"
)

// OwnerRelease plans the break-glass release of one owner an operator
// knows to be dead. Its AppStatus rows are judged dead whatever their
// heartbeat says, and the plan keeps only:
//   - every holding of the owner, each released (a holding the pass would
//     keep, such as the lock of a task that finished moments ago or of an
//     immediate task, is released as owner-dead: the owner will not do it);
//   - the tasks claimed by the owner's rows, lost or orphaned as for a dead
//     worker (canceled/failed, requeued/canceled per the policy).
//
// The mass-death guard does not apply: one owner is named explicitly. The
// per-pass limits do. An owner with an online row is refused unless p.Force
// (see refuseAliveOwner). Suspects are remembered as they were; only the ones
// this release settles are forgotten.
func OwnerRelease(snap Snapshot, p Policy, owner string) Plan {
	actual := FleetOf(snap, p).Owner(owner)
	if actual.Rows > 0 && actual.Liveness == Alive && !p.Force {
		return refuseAliveOwner(snap, p, actual)
	}
	declared := snap
	declared.AppStatuses = declareDead(snap.AppStatuses, snap.Now, p.HeartbeatGrace, owner)
	forced := p
	forced.Force = true
	full := All(declared, forced)
	plan := ownerPlan(full, snap, owner)
	for i := range plan.FleetOwners {
		plan.FleetOwners[i].HeartbeatAge = actual.HeartbeatAge
	}
	plan.Holdings = ownerHoldings(full, owner, actual)
	waitForOtherOwners(plan.Tasks, full, owner)
	applyGuards(&plan, NewFleet(declared.AppStatuses, declared.Now, p.HeartbeatGrace), nil, forced)
	// The break-glass release judges one owner: the guard's memory stays
	// as it was.
	plan.SeenAlive = maps.Clone(snap.SeenAlive)
	plan.countListed()
	return plan
}

// ownerHoldings is every holding of owner in full, each released as the
// holding of a dead owner.
func ownerHoldings(full Plan, owner string, realOwner Owner) []Judgement {
	var out []Judgement
	for _, jd := range full.Holdings {
		if jd.Owner != owner {
			continue
		}
		if jd.Action != ActionRelease {
			jd.Verdict, jd.Action, jd.FirstSeen = VerdictOwnerDead, ActionRelease, nil
		}
		jd.Deferred = ""
		out = append(out, jd)
	}
	if len(out) > 0 && out[0].facts != nil {
		// The owner is judged dead (an immediate-<uuid> owner has no row
		// to declare dead), so that its registry leaves pulp:active_owners
		// once empty; the heartbeat reported is the one it really had. Its
		// holdings all point to full's one record of it, which is this
		// plan's now: full itself is never shown.
		o := out[0].facts.owner
		if o.liveness != Gone {
			o.liveness = Dead
		}
		if realOwner.Rows > 0 {
			o.heartbeatAge = durationPtr(realOwner.HeartbeatAge)
		}
	}
	return out
}

// ownerPlan is the part of full that concerns owner but its holdings: its
// fleet names and the tasks its rows claim, with the suspects as they were.
func ownerPlan(full Plan, snap Snapshot, owner string) Plan {
	rows := map[string]bool{}
	for _, a := range snap.AppStatuses {
		if a.Name == owner {
			rows[a.ID] = true
		}
	}
	plan := Plan{Now: full.Now, Suspects: maps.Clone(snap.Suspects)}
	if plan.Suspects == nil {
		plan.Suspects = map[SuspectKey]Suspect{}
	}
	for _, o := range full.FleetOwners {
		if o.Name == owner {
			plan.FleetOwners = append(plan.FleetOwners, o)
		}
	}
	for _, tj := range full.Tasks {
		if rows[tj.AppLockID] {
			plan.Tasks = append(plan.Tasks, tj)
		}
	}
	return plan
}

// waitForOtherOwners defers the update of each task whose lock another
// owner holds in full: a requeue waits until the task's lock is gone, and a
// lock held by another owner is not this release's to remove.
func waitForOtherOwners(tasks []TaskJudgement, full Plan, owner string) {
	heldByOthers := map[string]bool{}
	for _, jd := range full.Holdings {
		if jd.Kind == KindTask && jd.Owner != owner {
			heldByOthers[jd.Key] = true
		}
	}
	for i := range tasks {
		tasks[i].Deferred = ""
		if UpdateWaits(&tasks[i], heldByOthers) {
			tasks[i].Deferred = DeferredOtherTaskKey
		}
	}
}

// declareDead returns the rows with the owner's heartbeats moved just past
// ttl + grace, so that every rule that asks for a dead owner applies. Rows
// already dead keep their heartbeat.
func declareDead(rows []AppStatus, now time.Time, grace time.Duration, owner string) []AppStatus {
	out := make([]AppStatus, len(rows))
	for i, a := range rows {
		if a.Name == owner && a.Liveness(now, grace) != Dead {
			a.LastHeartbeat = now.Add(-(a.TTL + grace + time.Second))
		}
		out[i] = a
	}
	return out
}

// refuseAliveOwner plans nothing for an owner whose heartbeat is current:
// its locks are most likely healthy. The plan shows the owner's holdings and
// tasks as a normal pass judges them, with anything a normal pass would do to
// them held back by the alive-owner guard.
func refuseAliveOwner(snap Snapshot, p Policy, o Owner) Plan {
	full := All(snap, p)
	plan := ownerPlan(full, snap, o.Name)
	plan.Guards = []Guard{{Name: GuardAliveOwner, Owner: o}}
	for _, jd := range full.Holdings {
		if jd.Owner != o.Name {
			continue
		}
		switch jd.Action {
		case ActionRelease:
			jd.Deferred = DeferredAliveOwner
		case ActionSuspect:
			// Not remembered either: the suspects stay as they were.
			jd.Action, jd.FirstSeen = ActionKeep, nil
		}
		plan.Holdings = append(plan.Holdings, jd)
	}
	for i := range plan.Tasks {
		if tj := &plan.Tasks[i]; tj.Action != ActionReport {
			tj.Deferred = DeferredAliveOwner
		}
	}
	plan.countListed()
	return plan
}
