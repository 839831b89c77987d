package judge

import (
	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// reservedBy names, for one resource holding, the first kept and the first
// released task lock of its owner whose task reserves it: positions among
// the task locks, -1 for none.
type reservedBy struct{ kept, released int32 }

// reservedBy finds, for each resource holding (by its position in the
// walk), the task locks of its owner whose task reserves it: each
// reservation finds the owner's holdings of its resource in the index.
// Of several, the first in key order is named, whatever the walk's order.
// A holding repeated in a snapshot built by hand gets what the first did.
func (j *judge) reservedBy(taskLocks []judgedTaskLock) []reservedBy {
	hs, resources := j.snap.Holdings, j.ix.resources
	by := make([]reservedBy, len(resources.placed))
	for i := range by {
		by[i] = reservedBy{-1, -1}
	}
	earlier := func(n, than int32) bool {
		return than < 0 || hs[taskLocks[n].at].Key < hs[taskLocks[than].at].Key
	}
	for n, tl := range taskLocks {
		owner := hs[tl.at].Owner
		for _, entry := range tl.reserved {
			r := ParseReservation(entry)
			for i := resources.search(hs, ResourceKeyPrefix, r.Resource, owner); i < len(resources.placed); i++ {
				h := &hs[resources.placed[i].at]
				if h.Owner != owner || !isKey(h.Key, ResourceKeyPrefix, r.Resource) {
					break
				}
				if h.Kind == r.Kind {
					by[i].offer(int32(n), tl.released, earlier)
				}
			}
		}
	}
	return by
}

// offer records task lock n, when it is the first of its kind in key order
// to reserve the holding.
func (rb *reservedBy) offer(n int32, released bool, earlier func(n, than int32) bool) {
	switch {
	case released && earlier(n, rb.released):
		rb.released = n
	case !released && earlier(n, rb.kept):
		rb.kept = n
	}
}

// resourceFacts is what the resource holding table of verdicts.md looks at,
// for one exclusive lock or shared membership.
type resourceFacts struct {
	owner heartbeat.Liveness
	// kept says a task lock kept this pass (or a suspect not yet confirmed)
	// has a task reserving the holding.
	kept bool
	// released says a task lock released this pass has one; inherits says
	// the holding goes with it (see resourceFactsOf).
	released, inherits bool
}

// decideResource applies the resource holding table of verdicts.md.
// inherited says the verdict is that of the released task lock.
func decideResource(f resourceFacts) (v Verdict, inherited bool) {
	switch {
	case f.kept:
		return VerdictJustified, false
	case f.released && f.inherits:
		return "", true
	case f.owner == heartbeat.Dead:
		return VerdictOwnerDead, false
	case f.owner == heartbeat.Gone:
		return VerdictOwnerGone, false
	default:
		return VerdictNoTask, false
	}
}

// resourceJudgement judges one resource holding. An inherited verdict carries
// its task lock's action: a confirmed task lock releases its resources in the
// same pass, without a confirmation of their own.
func (j *judge) resourceJudgement(h Holding, rb reservedBy, taskLocks []judgedTaskLock) Judgement {
	e := j.ownerEvidence(h.Owner)
	// A shared membership is one set member for every task of its owner on
	// that resource, so while the owner also holds a kept task lock whose
	// reservations are unknown, it may be that task's too: it is then judged
	// like a holding no task explains, released only once confirmed, as the
	// unknown task's own resources are. An exclusive lock was taken together
	// with the released task lock that reserves it, and is that task's alone.
	opaque := h.Kind == KindShared && j.opaque[h.Owner]
	v, inherited := decideResource(resourceFacts{owner: e.OwnerLiveness, kept: rb.kept >= 0, released: rb.released >= 0, inherits: !opaque})
	switch {
	case v == VerdictJustified:
		tl := j.snap.Holdings[taskLocks[rb.kept].at]
		e.Via = tl.Key
		if j.listAll {
			e.TaskState = j.snap.Tasks[tl.TaskID()].State
		}
		return j.judgement(Judgement{Holding: h, Verdict: v, Action: ActionKeep}, e)
	case inherited:
		// The task lock's verdict and evidence are decided again: a
		// confirmation changes only its action.
		lock := j.snap.Holdings[taskLocks[rb.released].at]
		t, found := j.snap.Tasks[lock.TaskID()]
		tl := j.decidedTaskLock(lock, t, found)
		te := tl.Evidence()
		e.Via, e.TaskState = tl.Key, te.TaskState
		e.FinishedAge, e.AppLock, e.AppLockLiveness = te.FinishedAge, te.AppLock, te.AppLockLiveness
		return j.judgement(Judgement{Holding: h, Verdict: tl.Verdict, Action: ActionRelease}, e)
	}
	jd := j.confirm(j.judgement(Judgement{Holding: h, Verdict: v, Action: v.action()}, e))
	if jd.Action == ActionRelease && v == VerdictNoTask && opaque {
		// The suspect may predate the invisible task that now shares this
		// membership: wait until that task lock is settled, so a
		// confirmation never outlives the reason it was raised for.
		jd.Action = ActionSuspect
	}
	return jd
}
