package judge

// Table tests of Judge against verdicts.md: one case per row of every table
// (owner liveness, task locks, resource holdings, confirmation, lost tasks,
// guards). Judge is pure, so these need no services.
//
// Helpers in this file are prefixed with jt so that they cannot collide with
// the helpers of the integration tests that share the package.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/stretchr/testify/require"
)

// jtNow is the database clock of every table snapshot.
var jtNow = time.Date(2026, 7, 24, 12, 0, 0, 0, time.UTC)

const (
	jtWorkerTTL = 30 * time.Second
	jtAPITTL    = 120 * time.Second
)

// jtID returns the n-th deterministic canonical task/row uuid.
func jtID(n int) string {
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n)
}

// jtWorld builds one snapshot the way Pulp would have written it.
type jtWorld struct {
	snap Snapshot
	next int
}

func jtNewWorld() *jtWorld {
	return &jtWorld{snap: Snapshot{
		Now:      jtNow,
		Tasks:    map[string]Task{},
		Suspects: map[SuspectKey]Suspect{},
		FullScan: true,
	}}
}

func (w *jtWorld) id() string {
	w.next++
	return jtID(w.next)
}

// row adds a core_appstatus row whose last heartbeat is age before now
// (negative: in the future) and returns its pulp_id.
func (w *jtWorld) row(name, appType string, ttl, age time.Duration) string {
	id := w.id()
	w.snap.AppStatuses = append(w.snap.AppStatuses, heartbeat.AppStatus{
		ID: id, Name: name, AppType: appType, TTL: ttl, LastHeartbeat: jtNow.Add(-age),
	})
	return id
}

func (w *jtWorld) worker(name string, age time.Duration) string {
	return w.row(name, "worker", jtWorkerTTL, age)
}

// task adds a core_task row; appLock "" is NULL.
func (w *jtWorld) task(state, appLock string, reserved ...string) string {
	id := w.id()
	w.snap.Tasks[id] = Task{ID: id, Name: "pulp_rpm.app.tasks.synchronize", State: state, AppLockID: appLock, Reserved: reserved}
	return id
}

// finished adds a final task that finished ago before now (nil: NULL finished_at).
func (w *jtWorld) finished(state string, ago *time.Duration, reserved ...string) string {
	id := w.task(state, "", reserved...)
	if ago != nil {
		at := jtNow.Add(-*ago)
		t := w.snap.Tasks[id]
		t.FinishedAt = &at
		w.snap.Tasks[id] = t
	}
	return id
}

func (w *jtWorld) taskLock(taskID, owner string) Holding {
	h := Holding{Key: TaskKeyPrefix + taskID, Kind: KindTask, Owner: owner, Registered: true}
	w.snap.Holdings = append(w.snap.Holdings, h)
	return h
}

func (w *jtWorld) resource(name string, kind Kind, owner string) Holding {
	h := Holding{Key: ResourceKeyPrefix + name, Kind: kind, Owner: owner, Registered: true}
	w.snap.Holdings = append(w.snap.Holdings, h)
	return h
}

// acquire takes the task lock and every reserved resource of the task under
// one owner, as pulpcore's acquire script does.
func (w *jtWorld) acquire(taskID, owner string) {
	w.taskLock(taskID, owner)
	for _, r := range w.snap.Tasks[taskID].Reserved {
		if name, ok := strings.CutPrefix(r, "shared:"); ok {
			w.resource(name, KindShared, owner)
		} else {
			w.resource(r, KindExclusive, owner)
		}
	}
}

// remember adds a suspect first seen ago before now.
func (w *jtWorld) remember(key, owner string, v Verdict, ago time.Duration) {
	w.snap.Suspects[SuspectKey{Key: key, Owner: owner}] = Suspect{Verdict: v, FirstSeen: jtNow.Add(-ago)}
}

func (w *jtWorld) judge(p Policy) Plan { return All(w.snap, p) }

func jtDur(d time.Duration) *time.Duration { return &d }

// jtHolding finds the judgement of one holding.
func jtHolding(t *testing.T, plan Plan, key, owner string) Judgement {
	t.Helper()
	var found []Judgement
	for _, jd := range plan.Holdings {
		if jd.Key == key && jd.Owner == owner {
			found = append(found, jd)
		}
	}
	require.Len(t, found, 1, "judgements of %s held by %s", key, owner)
	return found[0]
}

// jtTask finds the judgement of one task, if any.
func jtTask(plan Plan, id string) (TaskJudgement, bool) {
	for _, tj := range plan.Tasks {
		if tj.ID == id {
			return tj, true
		}
	}
	return TaskJudgement{}, false
}

func jtHasGuard(plan Plan, name string) bool {
	for _, g := range plan.Guards {
		if g.Name == name {
			return true
		}
	}
	return false
}

// ---------------------------------------------------------------------------
// Owner liveness

// jtGuardWorld is a fleet of worker rows, some dead, with one holding or
// task for each verdict the guards care about.
type jtGuardWorld struct {
	w                                  *jtWorld
	ownerDead, ownerDeadResource       Holding
	taskLost, taskLostResource         Holding
	ownerGone, finished, confirmedLeak Holding
	lost, orphaned                     string
}

// jtRecentlyDead is the heartbeat age of a worker that died a minute ago
// (ttl + grace + 1m), well within MassDeathWindow.
const jtRecentlyDead = jtWorkerTTL + jtHeartbeatGrace + time.Minute

// jtMassDeath builds `workers` worker rows of which the first `dead` are dead.
// It adds rows of its own: a restarted worker "5@reborn" (one live row, one
// dead row), and a dead "0@retired" when dead is 0, so that there is always an
// owner-dead holding. Dead API rows are added too; they are no workers.
func jtMassDeath(workers, dead int) *jtGuardWorld {
	g := &jtGuardWorld{w: jtNewWorld()}
	w := g.w
	deadName, deadRow := "", ""
	for i := range workers {
		name := fmt.Sprintf("%d@worker-%d", i+1, i)
		if i < dead {
			// Dead for a minute: a recent death, which the guard counts.
			row := w.worker(name, jtRecentlyDead)
			if deadName == "" {
				deadName, deadRow = name, row
			}
		} else {
			w.worker(name, time.Second)
		}
	}
	if deadName == "" {
		deadName = "0@retired"
		deadRow = w.worker(deadName, jtRecentlyDead)
	}
	w.row("9@api-dead", "api", jtAPITTL, time.Hour)
	w.row("9@api-dead2", "api", jtAPITTL, time.Hour)

	// owner-dead: a waiting task claimed by the dead worker, whose locks it
	// holds (and an orphaned claim).
	od := w.task(StateWaiting, deadRow, "shared:D")
	w.acquire(od, deadName)
	g.ownerDead = Holding{Key: TaskKeyPrefix + od, Owner: deadName}
	g.ownerDeadResource = Holding{Key: ResourceKeyPrefix + "D", Owner: deadName}
	g.orphaned = od

	// task-lost: a restarted worker reusing a dead name holds the locks of
	// its predecessor's running task (and the task is lost).
	w.worker("5@reborn", time.Second)
	oldRow := w.worker("5@reborn", time.Hour)
	tl := w.task(StateRunning, oldRow, "R-lost")
	w.acquire(tl, "5@reborn")
	g.taskLost = Holding{Key: TaskKeyPrefix + tl, Owner: "5@reborn"}
	g.taskLostResource = Holding{Key: ResourceKeyPrefix + "R-lost", Owner: "5@reborn"}
	g.lost = tl

	// Releases on other grounds: owner-gone, task-finished, confirmed no-task.
	g.ownerGone = w.resource("R-gone", KindExclusive, "3@vanished")
	g.finished = w.taskLock(w.finished(StateCompleted, jtDur(time.Hour)), "5@reborn")
	g.confirmedLeak = w.resource("R-leak", KindExclusive, "5@reborn")
	w.remember(g.confirmedLeak.Key, "5@reborn", VerdictNoTask, time.Hour)
	return g
}
