package judge

import (
	"maps"
	"slices"
)

// Evidence is assembled apart from the decisions: the rules take facts and
// return verdicts; what the report shows of those facts is built here.

// ownerCache holds each owner's part of the evidence, which all its holdings
// share (with one heartbeat age), and the liveness values AppLockLiveness
// points to, one per value, so that a hundred thousand task locks do not
// each allocate one.
type ownerCache struct {
	evidence   map[string]Evidence
	livenesses *[4]Liveness
	// facts holds one copy of each distinct evidence without a Via that
	// judgements share (see Judgement.facts).
	facts map[Evidence]*Evidence
}

// owner returns the liveness of a lock owner. An immediate-<uuid> owner is a
// task, not a process: alive while that task is incomplete, gone once it is
// final. While its row is not visible (the dispatching transaction may not
// have committed) it counts as alive, so only confirmed verdicts can apply.
func (j *judge) owner(name string) Owner { return LockOwner(j.snap.Tasks, j.fleet, name) }

// LockOwner is the liveness of the lock owner name, given the snapshot's
// tasks and fleet (see judge.owner).
func LockOwner(tasks map[string]Task, fleet *Fleet, name string) Owner {
	if id, ok := ImmediateTaskID(name); ok {
		if t, found := tasks[id]; found && Final(t.State) {
			return Owner{Name: name, Liveness: Gone}
		}
		return Owner{Name: name, Liveness: Alive}
	}
	return fleet.Owner(name)
}

// ownerEvidence is the owner's liveness and heartbeat age.
func (j *judge) ownerEvidence(name string) Evidence {
	if e, ok := j.owners.evidence[name]; ok {
		return e
	}
	o := j.owner(name)
	e := Evidence{OwnerLiveness: o.Liveness, Kubernetes: o.Kubernetes}
	if o.Rows > 0 {
		e.HeartbeatAge = durationPtr(o.HeartbeatAge)
	}
	if j.owners.evidence == nil {
		j.owners.evidence = map[string]Evidence{}
	}
	j.owners.evidence[name] = e
	return e
}

// judgement is jd with evidence e, whose facts it shares with every
// judgement of this plan whose facts are equal. A judgement the plan only
// counts gets none: nothing shows it.
func (j *judge) judgement(jd Judgement, e Evidence) Judgement {
	if !j.lists(jd.Verdict) {
		return jd
	}
	jd.via, e.Via = e.Via, ""
	jd.keepFinishedAge(&e)
	if p, ok := j.owners.facts[e]; ok {
		jd.facts = p
		return jd
	}
	if j.owners.facts == nil {
		j.owners.facts = map[Evidence]*Evidence{}
	}
	// A copy of its own, made only when new: taking e's address would move
	// every call's e to the heap.
	p := new(Evidence)
	*p = e
	j.owners.facts[e] = p
	jd.facts = p
	return jd
}

// liveness returns a pointer to l that the judgements of one plan share.
func (j *judge) liveness(l Liveness) *Liveness {
	if l < 0 || int(l) >= len(j.owners.livenesses) {
		odd := l
		return &odd
	}
	if j.owners.livenesses == nil {
		j.owners.livenesses = &[4]Liveness{Gone, Dead, Late, Alive}
	}
	return &j.owners.livenesses[l]
}

// taskLockEvidence adds what the task row says to the owner's evidence e.
func (j *judge) taskLockEvidence(e Evidence, t Task, found bool) Evidence {
	if !found {
		return e
	}
	e.TaskState = t.State
	if t.FinishedAt != nil {
		e.FinishedAge = durationPtr(j.snap.Now.Sub(*t.FinishedAt))
	}
	if row, live, ok := j.fleet.Row(t.AppLockID); ok {
		e.AppLock, e.AppLockLiveness = row.Name, j.liveness(live)
	}
	return e
}

// lockOwners reports each owner of a holding, by name.
func (j *judge) lockOwners() []OwnerReport {
	out := make([]OwnerReport, 0, len(j.byOwner))
	for _, name := range slices.Sorted(maps.Keys(j.byOwner)) {
		out = append(out, ownerReport(name, j.ownerEvidence(name), j.byOwner[name]))
	}
	return out
}

// ownerReport is the one report of an owner of holdings, built from its
// evidence, for every plan (audit, once, release): liveness, heartbeat age
// and the pod evidence.
func ownerReport(name string, e Evidence, holdings int) OwnerReport {
	return OwnerReport{Name: name, Liveness: e.OwnerLiveness.String(), HeartbeatAge: e.HeartbeatAge, Holdings: holdings, Kubernetes: e.Kubernetes}
}

// Guarded says a release must first check that the holding's owner took no
// new task since the snapshot: a resource of a live or late owner.
func Guarded(jd Judgement) bool {
	l := Gone
	if jd.facts != nil {
		l = jd.facts.OwnerLiveness
	}
	return (l == Alive || l == Late) && jd.Kind != KindTask
}
