package passtest

import (
	"fmt"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// WorldNow is the database clock of every World.
var WorldNow = time.Date(2026, 7, 24, 12, 0, 0, 0, time.UTC)

// WorldRepo is a repository's resource name for World's tasks.
const WorldRepo = "prn:rpm.rpmrepository:0000000a-0000-4000-8000-00000000000a"

// World is a snapshot under construction, as a pass would read it, for the
// pure tests of the judge's plans and of explain: no service is needed.
type World struct {
	Snap   judge.Snapshot
	Policy judge.Policy
	next   int
}

// NewWorld returns an empty snapshot at WorldNow, judged with policy
// (reaper.DefaultConfig's, as a rule: this package cannot import pass, for
// pulpdb's tests use it).
func NewWorld(policy judge.Policy) *World {
	return &World{
		Snap:   judge.Snapshot{Now: WorldNow, Tasks: map[string]judge.Task{}, Suspects: map[judge.SuspectKey]judge.Suspect{}, FullScan: true},
		Policy: policy,
	}
}

// ID returns a new UUID, distinct within the world.
func (w *World) ID() string {
	w.next++
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", w.next, w.next)
}

// Worker adds a worker's core_appstatus row whose heartbeat is age old.
func (w *World) Worker(name string, age time.Duration) string {
	id := w.ID()
	w.Snap.AppStatuses = append(w.Snap.AppStatuses, heartbeat.AppStatus{ID: id, Name: name, AppType: "worker", TTL: 30 * time.Second, LastHeartbeat: WorldNow.Add(-age)})
	return id
}

// Task adds a core_task row with the given id ("" for a new one).
func (w *World) Task(id, state, appLock string, reserved ...string) string {
	if id == "" {
		id = w.ID()
	}
	w.Snap.Tasks[id] = judge.Task{ID: id, Name: "sync", State: state, AppLockID: appLock, Reserved: reserved}
	return id
}

// FinishedAgo sets a task's finished_at.
func (w *World) FinishedAgo(id string, ago time.Duration) {
	t := w.Snap.Tasks[id]
	at := WorldNow.Add(-ago)
	t.FinishedAt = &at
	w.Snap.Tasks[id] = t
}

// Hold adds the locks of a task as Pulp's acquire script writes them.
func (w *World) Hold(owner, taskID string, reserved ...string) {
	w.Snap.Holdings = append(w.Snap.Holdings, judge.Holding{Key: judge.TaskKeyPrefix + taskID, Kind: judge.KindTask, Owner: owner, Registered: true})
	for _, n := range judge.Reservations(reserved) {
		w.Snap.Holdings = append(w.Snap.Holdings, judge.Holding{Key: judge.ResourceKeyPrefix + n.Resource, Kind: n.Kind, Owner: owner, Registered: true})
	}
}

// WithEvidence is jd with evidence e (judge.Judgement.SetEvidence), for a
// judgement built by hand.
func WithEvidence(jd judge.Judgement, e judge.Evidence) judge.Judgement {
	jd.SetEvidence(e)
	return jd
}
