package judge

import (
	"slices"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// holdingKey is a resource holding as a task's reservation names it: the
// owner (the task lock's, or the worker running the task), the resource,
// and the kind of lock.
type holdingKey struct {
	owner, resource string
	kind            Kind
}

// resourceIndex finds the resource holdings of a snapshot that a task's
// reservation names, by position, so that what the task locks say of them
// is kept in a slice beside the holdings, not in a map of their keys. One
// lookup of a string, not of an owner, resource and kind, per reservation:
// a third of the judge's time went to that map on a production fleet.
type resourceIndex struct {
	// exclusive is each exclusive lock's position by resource (Redis keeps
	// one owner per key); shared, each membership's by resource and owner
	// (a domain's set has a member per process, and there are few domains).
	exclusive map[string]int32
	shared    map[string]map[string]int32
	// more holds a second holding of one owner, resource and kind, or a
	// second exclusive holding of one resource: the reader sends each key
	// and member once, a snapshot built by hand may not.
	more map[holdingKey][]int32
}

// newResourceIndex indexes the resource holdings, and counts the task locks.
// Most reservations name a holding of the snapshot: the maps are made once
// at about their size, not grown through copies.
func newResourceIndex(holdings []Holding) (x resourceIndex, taskLocks int) {
	for i := range holdings {
		if holdings[i].Kind == KindTask {
			taskLocks++
		}
	}
	x = resourceIndex{exclusive: make(map[string]int32, len(holdings)-taskLocks), shared: map[string]map[string]int32{}}
	for i := range holdings {
		h := &holdings[i]
		var m map[string]int32
		var name string
		switch h.Kind {
		case KindTask:
			continue
		case KindExclusive:
			m, name = x.exclusive, h.Resource()
		default:
			if m = x.shared[h.Resource()]; m == nil {
				m = map[string]int32{}
				x.shared[h.Resource()] = m
			}
			name = h.Owner
		}
		if _, dup := m[name]; !dup {
			m[name] = int32(i)
			continue
		}
		if x.more == nil {
			x.more = map[holdingKey][]int32{}
		}
		k := holdingKey{h.Owner, h.Resource(), h.Kind}
		x.more[k] = append(x.more[k], int32(i))
	}
	return x, taskLocks
}

// find is the position of the first holding of owner's reservation r.
func (x *resourceIndex) find(holdings []Holding, owner string, r Reservation) (int32, bool) {
	if r.Kind == KindShared {
		at, ok := x.shared[r.Resource][owner]
		return at, ok
	}
	at, ok := x.exclusive[r.Resource]
	return at, ok && holdings[at].Owner == owner
}

// holds says owner holds what reservation r takes: its lock, or for a
// shared reservation also the resource's exclusive lock (pulpcore takes
// that alone for a record that names a resource both ways).
// A holding find misses (a second exclusive holding of a resource, in
// whatever order the snapshot came) is in more.
func (x *resourceIndex) holds(holdings []Holding, owner string, r Reservation) bool {
	has := func(kind Kind) bool {
		if _, ok := x.find(holdings, owner, Reservation{Resource: r.Resource, Kind: kind}); ok {
			return true
		}
		return len(x.more[holdingKey{owner, r.Resource, kind}]) > 0
	}
	return has(r.Kind) || r.Kind == KindShared && has(KindExclusive)
}

// reservedBy names, for one resource holding, the kept and the released
// task lock of its owner whose task reserves it, by position in the
// snapshot plus one (0 for none). Of several, the one with the smallest key
// is named, so that the same snapshot names the same lock whatever its
// order.
type reservedBy struct{ kept, released int32 }

// offer records the task lock at position at of holdings, unless one of
// its kind (kept or released) with a smaller key came before it.
func (rb *reservedBy) offer(holdings []Holding, at int, released bool) {
	named := &rb.kept
	if released {
		named = &rb.released
	}
	if *named == 0 || holdings[at].Key < holdings[*named-1].Key {
		*named = int32(at) + 1
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
	// the holding goes with it (see resourceJudgement).
	released, inherits bool
	// rowReserves says a running or canceling task row claimed by the
	// owner's live or late row reserves the holding, whatever Redis holds of
	// its task lock.
	rowReserves bool
}

// decideResource applies the resource holding table of verdicts.md.
// inherited says the verdict is that of the released task lock.
func decideResource(f resourceFacts) (v Verdict, inherited bool) {
	switch {
	case f.kept:
		return VerdictJustified, false
	case f.rowReserves && (f.owner == heartbeat.Alive || f.owner == heartbeat.Late):
		// The task runs: its task lock vanished (an eviction, a failover
		// that lost a write, an operator's DEL), not its need. Before the
		// inherited row: a finished task's stale lock reserving a shared
		// resource must not take the running task's membership with it.
		return VerdictJustified, false
	case f.released && f.inherits:
		return noVerdict, true
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
func (j *judge) resourceJudgement(at int) Judgement {
	h := &j.snap.Holdings[at]
	rb := j.reservedBy[at]
	// A shared membership is one set member for every task of its owner on
	// that resource, so while the owner also holds a kept task lock whose
	// reservations are unknown, it may be that task's too: it is then judged
	// like a holding no task explains, released only once confirmed, as the
	// unknown task's own resources are. An exclusive lock was taken together
	// with the released task lock that reserves it, and is that task's alone.
	opaque := h.Kind == KindShared && j.opaque[h.Owner]
	f := resourceFacts{owner: j.record(h.Owner).liveness, kept: rb.kept > 0, released: rb.released > 0, inherits: !opaque}
	var byRow string
	if !f.kept && (f.owner == heartbeat.Alive || f.owner == heartbeat.Late) {
		byRow = j.reservingRow(h)
		f.rowReserves = byRow != ""
	}
	v, inherited := decideResource(f)
	switch {
	case v == VerdictJustified && !j.lists(v):
		// Only counted: its evidence is never assembled.
		return Judgement{Holding: *h, Verdict: v, Action: ActionKeep}
	case v == VerdictJustified && !f.kept:
		// Named by its task key, as a kept task lock would be, though
		// that lock may be gone.
		s := shown{via: TaskKeyPrefix + byRow, facts: judgedFacts{taskState: j.snap.Tasks[byRow].State}}
		return j.judgement(Judgement{Holding: *h, Verdict: v, Action: ActionKeep}, s)
	case v == VerdictJustified:
		kept := &j.snap.Holdings[rb.kept-1]
		s := shown{via: kept.Key}
		if j.listAll {
			s.facts.taskState = j.snap.Tasks[kept.TaskID()].State
		}
		return j.judgement(Judgement{Holding: *h, Verdict: v, Action: ActionKeep}, s)
	case inherited:
		// The task lock's verdict and evidence are decided again: a
		// confirmation changes only its action.
		released := &j.snap.Holdings[rb.released-1]
		t, found := j.snap.Tasks[released.TaskID()]
		tl := j.taskLockJudgement(released, t, found)
		s := shown{via: tl.Key, finishedFor: tl.finishedFor}
		if tl.facts != nil {
			s.facts = *tl.facts
		}
		return j.judgement(Judgement{Holding: *h, Verdict: tl.Verdict, Action: ActionRelease}, s)
	}
	jd := j.confirm(j.judgement(Judgement{Holding: *h, Verdict: v, Action: v.action()}, shown{}))
	if jd.Action == ActionRelease && v == VerdictNoTask && opaque {
		// The suspect may predate the invisible task that now shares this
		// membership: wait until that task lock is settled, so a
		// confirmation never outlives the reason it was raised for.
		jd.Action = ActionSuspect
	}
	return jd
}

// reservingRow names the running or canceling task whose row, claimed by a
// live or late row named after h's owner, reserves h's resource with h's
// kind; or, for an immediate-<T> owner, T when its row is running or
// canceling and reserves it. "" for none. The running tasks' reservations
// are gathered with the task verdicts (rowReserves).
func (j *judge) reservingRow(h *Holding) string {
	if id, ok := ImmediateTaskID(h.Owner); ok {
		if t, found := j.snap.Tasks[id]; found && runs(t.State) && reservesHolding(t, h) {
			return id
		}
		return ""
	}
	return j.rowReserved[holdingKey{h.Owner, h.Resource(), h.Kind}]
}

// rowReserves gathers what running task id, claimed by the live or late
// row named worker, reserves, each resource named by the smallest such
// task id, so that the same snapshot names the same task whatever the
// map's order. A task whose lock the snapshot holds once, by worker, is
// left out: that lock is kept (its claim lives), and justifies the same
// holdings first. So a healthy fleet, where every running task holds its
// lock, gathers nothing.
func (j *judge) rowReserves(id string, t Task, worker string, held taskLocksHeld) {
	if held.count == 1 && j.snap.Holdings[held.last].Owner == worker {
		return
	}
	for _, r := range Reservations(t.Reserved) {
		k := holdingKey{worker, r.Resource, r.Kind}
		if cur, seen := j.rowReserved[k]; !seen || id < cur {
			j.rowReserved[k] = id
		}
	}
}

// runs says a task in this state is being executed by its worker.
func runs(state string) bool { return state == StateRunning || state == StateCanceling }

// reservesHolding says t's record reserves h's resource with h's kind.
func reservesHolding(t Task, h *Holding) bool {
	want := Reservation{h.Resource(), h.Kind}
	return slices.ContainsFunc(t.Reserved, func(entry string) bool { return ParseReservation(entry) == want })
}
