// Package explain says why a task waits, runs or was lost, and what the next
// pass does about it, from an inspection (reaper.Inspect): who holds the locks
// it needs, which older tasks go first, which process claims it. It reads
// nothing and writes nothing.
package explain

import (
	"encoding/json"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// Status sums up why a task is where it is.
type Status string

const (
	// StatusNotFound: no core_task row has the id.
	StatusNotFound Status = "not-found"
	// StatusFinished: the task is in a final state.
	StatusFinished Status = "finished"
	// StatusLost: running or canceling, its worker dead or its claim gone.
	StatusLost Status = "lost"
	// StatusOrphaned: waiting, claimed by a dead worker.
	StatusOrphaned Status = "orphaned"
	// StatusStuck: waiting, claimed by a live worker that holds no lock for it.
	StatusStuck Status = "stuck"
	// StatusRunning: running or canceling on a worker that is not dead.
	StatusRunning Status = "running"
	// StatusStarting: waiting, claimed by a live worker: about to run.
	StatusStarting Status = "starting"
	// StatusBlocked: a stale or suspect lock stands in its way; a pass will
	// release it (at once or once confirmed).
	StatusBlocked Status = "blocked"
	// StatusWaiting: a healthy lock or an older task goes first.
	StatusWaiting Status = "waiting"
	// StatusReady: nothing holds its resources and no older task needs them.
	StatusReady Status = "ready"
)

// Explanation says why one task waits, runs or was lost, from one
// inspection. It is what `lock-reaper explain --output json` prints.
type Explanation struct {
	TaskID string `json:"task_id"`
	// DBNow is the database clock every age was measured against.
	DBNow time.Time `json:"db_now"`
	// Task is the task's row; nil when it has none.
	Task *pulpdb.TaskRow `json:"task,omitempty"`
	// Claim is the process the task's app_lock_id points at.
	Claim *Process `json:"claim,omitempty"`
	// TaskLocks are the holdings of task:<id> (normally none or one).
	TaskLocks []Holder `json:"task_locks"`
	// Resources are the task's reservations and who holds each in Redis.
	Resources []ResourceNeed `json:"resources"`
	// Ahead are the older waiting tasks that need the same resources in a
	// conflicting way and therefore go first; AheadTotal counts all of them
	// when the inspection loaded only the first MaxAhead.
	Ahead      []TaskAhead `json:"ahead"`
	AheadTotal int         `json:"ahead_total"`
	// TaskVerdict is what a pass would do to the task itself, if anything.
	TaskVerdict *reaper.TaskVerdict `json:"task_verdict,omitempty"`
	// Unprotected is set for a running task whose task lock is gone.
	Unprotected *Unprotected `json:"unprotected,omitempty"`
	// Passes is what the caller found in the history of passes; absent
	// when it read none (then the conclusion speaks of the next pass).
	Passes *Passes `json:"passes,omitempty"`
	Status Status  `json:"status"`
	// Conclusion is one line for a human.
	Conclusion string `json:"conclusion"`
}

// Process is a core_appstatus row a task is claimed by, as judged.
type Process struct {
	AppLockID string `json:"app_lock_id"`
	// Name and AppType are empty when the row no longer exists.
	Name         string             `json:"name,omitempty"`
	AppType      string             `json:"app_type,omitempty"`
	Liveness     heartbeat.Liveness `json:"liveness"`
	HeartbeatAge *reaper.Seconds    `json:"heartbeat_age,omitempty"`
}

// ResourceNeed is one reservation of the task and its holders in Redis.
type ResourceNeed struct {
	Resource string `json:"resource"`
	// Need is how the task reserves it: exclusive or shared.
	Need    judge.Kind `json:"need"`
	Holders []Holder   `json:"holders"`
}

// Holder is one holding that matters to the explained task, with the
// verdict a pass would give it.
type Holder struct {
	reaper.HoldingRef
	Liveness heartbeat.Liveness `json:"owner_liveness"`
	reaper.OwnerView
	// Task is the task the owner holds it for, through its task lock.
	Task *TaskRef `json:"task,omitempty"`
	// Own says it is held for the explained task itself.
	Own bool `json:"own"`
	// Blocks says it keeps the waiting task from acquiring its locks.
	Blocks bool `json:"blocks"`
	reaper.HoldingVerdict
}

// TaskRef is a task mentioned by an explanation.
type TaskRef struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// State is empty when the task has no row.
	State string `json:"state,omitempty"`
}

// TaskAhead is an older waiting task that goes first.
type TaskAhead struct {
	pulpdb.TaskRow
	// Conflicts lists the explained task's resources it needs in a
	// conflicting way.
	Conflicts []string
	Claim     *Process
}

// taskAheadJSON is a task ahead as JSON writes it: the row's members, then
// the conflicts and the claim.
type taskAheadJSON struct {
	pulpdb.TaskRowJSON
	Conflicts []string `json:"conflicts"`
	Claim     *Process `json:"claim,omitempty"`
}

// MarshalJSON writes the printed form.
func (t TaskAhead) MarshalJSON() ([]byte, error) {
	return json.Marshal(taskAheadJSON{TaskRowJSON: t.TaskRow.JSON(), Conflicts: t.Conflicts, Claim: t.Claim})
}

// UnmarshalJSON reads the printed form.
func (t *TaskAhead) UnmarshalJSON(b []byte) error {
	var j taskAheadJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*t = TaskAhead{TaskRow: j.TaskRowJSON.Row(), Conflicts: j.Conflicts, Claim: j.Claim}
	return nil
}

// Explain says why the task waits, runs or was lost, from an inspection
// alone: it is pure, and every age is measured on the inspection's database
// clock. A task the inspection has no row of is StatusNotFound.
func Explain(in *reaper.Inspection, taskID string) Explanation {
	return ExplainPassing(in, taskID, nil)
}

type explainer struct {
	in     *reaper.Inspection
	fleet  *heartbeat.Fleet
	id     string
	passes *Passes
	// awaitsPass says the conclusion names what a pass does.
	awaitsPass bool
	e          Explanation
}

func (x *explainer) run() Explanation {
	snap := x.in.Snapshot
	x.e = Explanation{TaskID: x.id, DBNow: snap.Now, TaskLocks: []Holder{}, Resources: []ResourceNeed{}, Ahead: []TaskAhead{}, Passes: x.passes}
	x.e.Task = x.taskRow()
	for _, tj := range x.in.Plan.Tasks {
		if tj.ID == x.id {
			x.e.TaskVerdict = reaper.TaskVerdictOf(&tj)
		}
	}
	x.collectTaskLocks()
	if x.e.Task == nil {
		x.e.Status, x.e.Conclusion = StatusNotFound, x.notFound()+x.noPassHint()
		return x.e
	}
	x.e.Claim = x.process(x.e.Task.AppLockID)
	x.collectResources()
	x.e.Unprotected = x.unprotected()
	x.collectAhead()
	x.e.Status, x.e.Conclusion = x.conclude()
	x.e.Conclusion += x.noPassHint()
	return x.e
}

// taskRow prefers the row read for explain, which has pulp_created, and falls
// back on the snapshot's.
func (x *explainer) taskRow() *pulpdb.TaskRow {
	if ex := x.in.Explained; ex != nil && ex.TaskID == x.id && ex.Row != nil {
		row := *ex.Row
		return &row
	}
	if t, ok := x.in.Snapshot.Tasks[x.id]; ok {
		return &pulpdb.TaskRow{Task: t}
	}
	return nil
}

func (x *explainer) process(appLockID string) *Process {
	if appLockID == "" {
		return nil
	}
	p := &Process{AppLockID: appLockID, Liveness: heartbeat.Gone}
	row, live, ok := x.fleet.Row(appLockID)
	if ok {
		p.Name, p.AppType, p.Liveness = row.Name, row.AppType, live
		p.HeartbeatAge = secondsPtr(x.in.Snapshot.Now.Sub(row.LastHeartbeat))
	}
	return p
}

func (x *explainer) taskRef(id string) *TaskRef {
	if id == "" {
		return nil
	}
	ref := &TaskRef{ID: id}
	if t, ok := x.in.Snapshot.Tasks[id]; ok {
		ref.Name, ref.State = t.Name, t.State
	} else if x.e.Task != nil && id == x.id {
		ref.Name, ref.State = x.e.Task.Name, x.e.Task.State
	}
	return ref
}

func (x *explainer) holder(jd judge.Judgement) Holder {
	// Each holder its own copy of the pod evidence: an explanation shows few.
	v := reaper.HoldingViewOf(&jd, nil)
	return Holder{HoldingRef: v.HoldingRef, Liveness: v.Liveness, OwnerView: v.OwnerView, Task: x.taskRef(v.Task), Own: v.Task == x.id,
		HoldingVerdict: v.HoldingVerdict}
}

// waiting says the task still has to acquire its locks: only then do other
// holdings and older tasks stand in its way.
func (x *explainer) waiting() bool {
	return x.e.Task != nil && x.e.Task.State == judge.StateWaiting && x.e.Task.AppLockID == ""
}

func (x *explainer) collectTaskLocks() {
	key := judge.TaskKeyPrefix + x.id
	for _, jd := range x.in.Plan.Holdings {
		if jd.Key == key {
			h := x.holder(jd)
			// Pulp's acquire fails while the task key exists, whoever holds it.
			h.Blocks = x.waiting()
			x.e.TaskLocks = append(x.e.TaskLocks, h)
		}
	}
}

func (x *explainer) collectResources() {
	byKey := map[string][]judge.Judgement{}
	for _, jd := range x.in.Plan.Holdings {
		if jd.Kind != judge.KindTask {
			byKey[jd.Key] = append(byKey[jd.Key], jd)
		}
	}
	for _, n := range judge.Reservations(x.e.Task.Reserved) {
		rn := ResourceNeed{Resource: n.Resource, Need: n.Kind, Holders: []Holder{}}
		for _, jd := range byKey[judge.ResourceKeyPrefix+n.Resource] {
			h := x.holder(jd)
			h.Blocks = x.waiting() && !h.Own && pulpdb.Conflicts(n.Kind, jd.Kind)
			rn.Holders = append(rn.Holders, h)
		}
		x.e.Resources = append(x.e.Resources, rn)
	}
}

func (x *explainer) collectAhead() {
	ex := x.in.Explained
	if ex == nil || ex.TaskID != x.id || judge.Final(x.e.Task.State) {
		return
	}
	mine := judge.Reservations(x.e.Task.Reserved)
	finishing := map[string]bool{}
	for _, tj := range x.in.Plan.Tasks {
		if tj.Action == judge.ActionUpdate && judge.Final(tj.StateAfter) {
			finishing[tj.ID] = true
		}
	}
	for _, t := range ex.Ahead {
		// Only a waiting task goes first; one the next pass cancels does not.
		if t.State != judge.StateWaiting || finishing[t.ID] {
			continue
		}
		var hits []string
		theirs := map[judge.Reservation]bool{}
		for _, n := range judge.Reservations(t.Reserved) {
			theirs[n] = true
		}
		for _, n := range mine {
			for _, kind := range []judge.Kind{judge.KindExclusive, judge.KindShared} {
				if theirs[judge.Reservation{Resource: n.Resource, Kind: kind}] && pulpdb.Conflicts(n.Kind, kind) {
					hits = append(hits, n.Resource)
					break
				}
			}
		}
		// The query already selected conflicting tasks; this check keeps
		// Explain right for any inspection it is given.
		if len(hits) > 0 {
			x.e.Ahead = append(x.e.Ahead, TaskAhead{TaskRow: t, Conflicts: hits, Claim: x.process(t.AppLockID)})
		}
	}
	x.e.AheadTotal = max(ex.AheadTotal-(len(ex.Ahead)-len(x.e.Ahead)), len(x.e.Ahead))
}

// On says what explain would say of a task judged on an inspection already
// made, with ex, the task's rows read since (reaper.Reaper.ExplainedTask):
// nothing else is read again. in is not changed.
func On(in *reaper.Inspection, ex *pulpdb.ExplainedTask, taskID string) Explanation {
	with := *in
	with.Explained = ex
	return Explain(&with, taskID)
}
