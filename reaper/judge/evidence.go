package judge

import (
	"maps"
	"slices"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// Evidence is assembled apart from the decisions: the rules take facts and
// return verdicts; what the report shows of those facts is built here.

// ownerCache holds the plan's record of each owner and the facts its listed
// judgements point to.
type ownerCache struct {
	records map[string]*ownerRecord
	facts   map[judgedFacts]*judgedFacts
}

// ownerRecord is a plan's one record of a lock owner's evidence: its
// liveness, heartbeat age and pod evidence, which the facts of every listed
// judgement of its holdings point to. A worker that dies holding a hundred
// thousand locks costs the plan one record, not one per lock.
type ownerRecord struct {
	liveness     heartbeat.Liveness
	heartbeatAge *Duration
	kubernetes   *heartbeat.PodEvidence
}

// judgedFacts is what a judgement shows: its owner's record, and what the
// task row it rests on said. The judgements with equal facts share one
// copy, which is most of them: an owner's holdings show a few task states.
type judgedFacts struct {
	owner           *ownerRecord
	taskState       string
	appLock         string
	appLockLiveness *heartbeat.Liveness
}

// shown is what a listed judgement will show besides its owner's record:
// the task row's facts, the task lock it refers to, and its task's
// finished age (0: none).
type shown struct {
	facts       judgedFacts
	via         string
	finishedFor time.Duration
}

// keptAge is a finished age as a judgement keeps it: 0 means none, so an
// age of 0 is kept as 1ns.
func keptAge(d time.Duration) time.Duration {
	if d == 0 {
		return 1
	}
	return d
}

// Evidence is what the verdict rested on, a copy the caller may change.
func (jd Judgement) Evidence() Evidence {
	var e Evidence
	if f := jd.facts; f != nil {
		e = Evidence{OwnerLiveness: f.owner.liveness, HeartbeatAge: f.owner.heartbeatAge, Kubernetes: f.owner.kubernetes,
			TaskState: f.taskState, AppLock: f.appLock, AppLockLiveness: f.appLockLiveness}
	}
	e.Via = jd.via
	if jd.finishedFor != 0 {
		e.FinishedAge = durationPtr(jd.finishedFor)
	}
	return e
}

// SetEvidence replaces the judgement's evidence with a record of its own.
func (jd *Judgement) SetEvidence(e Evidence) {
	jd.via, jd.finishedFor = e.Via, 0
	if e.FinishedAge != nil {
		jd.finishedFor = keptAge(time.Duration(*e.FinishedAge))
	}
	jd.facts = &judgedFacts{owner: &ownerRecord{liveness: e.OwnerLiveness, heartbeatAge: e.HeartbeatAge, kubernetes: e.Kubernetes},
		taskState: e.TaskState, appLock: e.AppLock, appLockLiveness: e.AppLockLiveness}
}

// LockOwner is the liveness of the lock owner name, given the snapshot's
// tasks and fleet. An immediate-<uuid> owner is a task, not a process:
// alive while that task is incomplete, gone once it is final. While its row
// is not visible (the dispatching transaction may not have committed) it
// counts as alive, so only confirmed verdicts can apply.
func LockOwner(tasks map[string]Task, fleet *heartbeat.Fleet, name string) heartbeat.Owner {
	if id, ok := ImmediateTaskID(name); ok {
		if t, found := tasks[id]; found && Final(t.State) {
			return heartbeat.Owner{Name: name, Liveness: heartbeat.Gone}
		}
		return heartbeat.Owner{Name: name, Liveness: heartbeat.Alive}
	}
	return fleet.Owner(name)
}

// judgement is jd showing s: its facts point to the plan's record of its
// owner, and are shared with every judgement whose facts are equal. A
// judgement the plan only counts gets none: nothing shows it.
func (j *judge) judgement(jd Judgement, s shown) Judgement {
	if !j.lists(jd.Verdict) {
		return jd
	}
	jd.via, jd.finishedFor = s.via, s.finishedFor
	f := s.facts
	f.owner = j.record(jd.Owner)
	p := j.owners.facts[f]
	if p == nil {
		// A copy of its own, made only when new: taking f's address would
		// move every call's f to the heap.
		p = new(judgedFacts)
		*p = f
		j.owners.facts[f] = p
	}
	jd.facts = p
	return jd
}

// record is the plan's one record of owner name's evidence, which all its
// holdings share (with one heartbeat age).
func (j *judge) record(name string) *ownerRecord {
	if o, ok := j.owners.records[name]; ok {
		return o
	}
	owner := LockOwner(j.snap.Tasks, j.fleet, name)
	o := &ownerRecord{liveness: owner.Liveness, kubernetes: owner.Kubernetes}
	if owner.Rows > 0 {
		o.heartbeatAge = durationPtr(owner.HeartbeatAge)
	}
	j.owners.records[name] = o
	return o
}

// livenesses are the values AppLockLiveness points to, one of each, so
// that a hundred thousand task locks do not each allocate one. Nothing
// writes through such a pointer.
var livenesses = [...]heartbeat.Liveness{heartbeat.Gone, heartbeat.Dead, heartbeat.Late, heartbeat.Alive}

func livenessPtr(l heartbeat.Liveness) *heartbeat.Liveness {
	if l < 0 || int(l) >= len(livenesses) {
		return &l
	}
	return &livenesses[l]
}

// taskRowShown is what task row t, when found, shows on its task lock.
func (j *judge) taskRowShown(t Task, found bool) (s shown) {
	if !found {
		return s
	}
	s.facts.taskState = t.State
	if t.FinishedAt != nil {
		s.finishedFor = keptAge(j.snap.Now.Sub(*t.FinishedAt))
	}
	if row, live, ok := j.fleet.Row(t.AppLockID); ok {
		s.facts.appLock, s.facts.appLockLiveness = row.Name, livenessPtr(live)
	}
	return s
}

// lockOwners reports each owner of a holding, by name.
func (j *judge) lockOwners() []OwnerReport {
	out := make([]OwnerReport, 0, len(j.byOwner))
	for _, name := range slices.Sorted(maps.Keys(j.byOwner)) {
		out = append(out, j.record(name).report(name, j.byOwner[name]))
	}
	return out
}

// report is the one report of an owner of holdings, built from the plan's
// record of it that its judgements show, for every plan (audit, once,
// release): liveness, heartbeat age and the pod evidence.
func (o *ownerRecord) report(name string, holdings int) OwnerReport {
	return OwnerReport{Name: name, Liveness: o.liveness.String(), HeartbeatAge: o.heartbeatAge, Holdings: holdings, Kubernetes: o.kubernetes}
}

// Guarded says a release must first check that the holding's owner took no
// new task since the snapshot that may hold the same resource again: a
// resource holding of a live or late owner, and a shared membership of any
// owner. Lock values are names, not incarnations: a dead or gone name can be
// reborn at any moment of the pass (a worker restarted under the same
// {pid}@{hostname}) and take a task that reserves the same resource shared,
// and the acquire adds a name already in the set without a trace. A task
// lock or an exclusive lock of a name neither alive nor late needs no check:
// the acquire fails on a key that exists, so a reborn name cannot have
// taken it again while it stands.
func Guarded(jd Judgement) bool {
	l := heartbeat.Gone
	if jd.facts != nil {
		l = jd.facts.owner.liveness
	}
	switch jd.Kind {
	case KindTask:
		return false
	case KindShared:
		return true
	}
	return l == heartbeat.Alive || l == heartbeat.Late
}
