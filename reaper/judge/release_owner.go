package judge

import (
	"maps"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// Deferral reasons of a break-glass release.
const (
	DeferredAliveOwner   = "alive-owner guard"
	DeferredOtherTaskKey = "its task lock is held by another owner"
)

// Deferral reasons of the guards of a pass: the mass-death guard's, and the
// per-pass limits' (the names of their settings).
const (
	DeferredMassDeath      = "mass-death guard"
	DeferredMaxReleases    = "max_releases"
	DeferredMaxTaskUpdates = "max_task_updates"
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
	if actual.Rows > 0 && actual.Liveness == heartbeat.Alive && !p.Force {
		return refuseAliveOwner(snap, p, actual)
	}
	declared := snap
	declared.AppStatuses = declareDead(snap.AppStatuses, snap.Now, p.HeartbeatGrace, owner)
	forced := p
	forced.Force = true
	plan, heldByOthers := ownerPlan(All(declared, forced), snap, owner)
	for i := range plan.FleetOwners {
		plan.FleetOwners[i].HeartbeatAge = actual.HeartbeatAge
	}
	releaseAsDead(plan.Holdings, actual)
	// A requeue waits until the task's lock is gone, and a lock held by
	// another owner is not this release's to remove.
	for i := range plan.Tasks {
		plan.Tasks[i].Deferred = ""
		if UpdateWaits(&plan.Tasks[i], heldByOthers) {
			plan.Tasks[i].Deferred = DeferredOtherTaskKey
		}
	}
	applyGuards(&plan, heartbeat.NewFleet(declared.AppStatuses, declared.Now, p.HeartbeatGrace), nil, forced)
	// The break-glass release judges one owner: the guard's memory stays
	// as it was.
	plan.SeenAlive = maps.Clone(snap.SeenAlive)
	plan.countListed()
	return plan
}

// releaseAsDead releases each of the owner's holdings as the holding of a
// dead owner.
func releaseAsDead(holdings []Judgement, realOwner heartbeat.Owner) {
	for i := range holdings {
		if jd := &holdings[i]; jd.Action != ActionRelease {
			jd.Verdict, jd.Action, jd.FirstSeen = VerdictOwnerDead, ActionRelease, nil
		}
		holdings[i].Deferred = ""
	}
	if len(holdings) > 0 && holdings[0].facts != nil {
		// The owner is judged dead (an immediate-<uuid> owner has no row
		// to declare dead), so that its registry leaves pulp:active_owners
		// once empty; the heartbeat reported is the one it really had. Its
		// holdings all point to the full plan's one record of it, which is
		// this plan's now: the full plan itself is never shown.
		o := holdings[0].facts.owner
		if o.liveness != heartbeat.Gone {
			o.liveness = heartbeat.Dead
		}
		if realOwner.Rows > 0 {
			o.heartbeatAge = durationPtr(realOwner.HeartbeatAge)
		}
	}
}

// ownerPlan is the part of full that concerns owner: its fleet names, its
// holdings as judged and the tasks its rows claim, with the suspects as
// they were; and the task lock keys other owners hold.
func ownerPlan(full Plan, snap Snapshot, owner string) (plan Plan, heldByOthers map[string]bool) {
	rows := map[string]bool{}
	for _, a := range snap.AppStatuses {
		if a.Name == owner {
			rows[a.ID] = true
		}
	}
	plan = Plan{Now: full.Now, Suspects: maps.Clone(snap.Suspects)}
	if plan.Suspects == nil {
		plan.Suspects = map[SuspectKey]Suspect{}
	}
	for _, o := range full.FleetOwners {
		if o.Name == owner {
			plan.FleetOwners = append(plan.FleetOwners, o)
		}
	}
	heldByOthers = map[string]bool{}
	for _, jd := range full.Holdings {
		switch {
		case jd.Owner == owner:
			plan.Holdings = append(plan.Holdings, jd)
		case jd.Kind == KindTask:
			heldByOthers[jd.Key] = true
		}
	}
	for _, tj := range full.Tasks {
		if rows[tj.AppLockID] {
			plan.Tasks = append(plan.Tasks, tj)
		}
	}
	return plan, heldByOthers
}

// declareDead returns the rows with the owner's heartbeats moved just past
// ttl + grace, so that every rule that asks for a dead owner applies. Rows
// already dead keep their heartbeat.
func declareDead(rows []heartbeat.AppStatus, now time.Time, grace time.Duration, owner string) []heartbeat.AppStatus {
	out := make([]heartbeat.AppStatus, len(rows))
	for i, a := range rows {
		if a.Name == owner && a.Liveness(now, grace) != heartbeat.Dead {
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
func refuseAliveOwner(snap Snapshot, p Policy, o heartbeat.Owner) Plan {
	plan, _ := ownerPlan(All(snap, p), snap, o.Name)
	plan.Guards = []Guard{{Name: GuardAliveOwner, Owner: o}}
	for i := range plan.Holdings {
		switch jd := &plan.Holdings[i]; jd.Action {
		case ActionRelease:
			jd.Deferred = DeferredAliveOwner
		case ActionSuspect:
			// Not remembered either: the suspects stay as they were.
			jd.Action, jd.FirstSeen = ActionKeep, nil
		}
	}
	for i := range plan.Tasks {
		if tj := &plan.Tasks[i]; tj.Action != ActionReport {
			tj.Deferred = DeferredAliveOwner
		}
	}
	plan.countListed()
	return plan
}
