package judge

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// NextChange names the first moment a verdict of the plan can change: a
// suspect's confirmation, a finished task's grace; each alone, then the
// earliest of them. A row's death by its heartbeat is not one: the daemon
// sees it in the rows it reads.
func TestNextChange(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 24, 12, 0, 0, 0, time.UTC)
	p := jtPolicy()
	alive := heartbeat.AppStatus{ID: "a", Name: "1@a", AppType: "worker", TTL: 30 * time.Second, LastHeartbeat: now.Add(-time.Second)}
	dead := heartbeat.AppStatus{ID: "d", Name: "1@d", AppType: "worker", TTL: 30 * time.Second, LastHeartbeat: now.Add(-time.Hour)}
	finished := now.Add(-10 * time.Second)
	const taskID = "0198a3c4-0000-7000-8000-000000000001"
	lock := Holding{Key: TaskKeyPrefix + taskID, Owner: "1@a", Kind: KindTask}
	suspects := map[SuspectKey]Suspect{{Key: "k", Owner: "1@a"}: {Verdict: VerdictNoTask, FirstSeen: now.Add(-time.Minute)}}
	oldSuspect := map[SuspectKey]Suspect{{Key: "k", Owner: "1@a"}: {Verdict: VerdictNoTask, FirstSeen: now.Add(-time.Hour)}}

	for name, tc := range map[string]struct {
		snap Snapshot
		plan Plan
		want time.Time
	}{
		"a row late or alive: not its death, which the daemon reads": {Snapshot{Now: now, AppStatuses: []heartbeat.AppStatus{alive, dead}}, Plan{}, time.Time{}},
		"nothing pending": {Snapshot{Now: now, AppStatuses: []heartbeat.AppStatus{dead}}, Plan{}, time.Time{}},
		"a suspect's confirmation": {Snapshot{Now: now, AppStatuses: []heartbeat.AppStatus{dead}}, Plan{Suspects: suspects},
			now.Add(-time.Minute + p.ConfirmAfter)},
		"a suspect already confirmed: nothing": {Snapshot{Now: now, AppStatuses: []heartbeat.AppStatus{dead}}, Plan{Suspects: oldSuspect}, time.Time{}},
		"a finished task's grace": {Snapshot{Now: now, AppStatuses: []heartbeat.AppStatus{dead}, Holdings: []Holding{lock},
			Tasks: map[string]Task{taskID: {ID: taskID, State: StateCompleted, FinishedAt: &finished}}}, Plan{}, finished.Add(p.FinishedGrace)},
		"a running task: nothing": {Snapshot{Now: now, AppStatuses: []heartbeat.AppStatus{dead}, Holdings: []Holding{lock},
			Tasks: map[string]Task{taskID: {ID: taskID, State: StateRunning}}}, Plan{}, time.Time{}},
		"the earliest": {Snapshot{Now: now, AppStatuses: []heartbeat.AppStatus{alive, dead}, Holdings: []Holding{lock},
			Tasks: map[string]Task{taskID: {ID: taskID, State: StateCompleted, FinishedAt: &finished}}}, Plan{Suspects: suspects},
			minTime(finished.Add(p.FinishedGrace), now.Add(-time.Minute+p.ConfirmAfter))},
		"with pods, a held worker's hung_worker_grace": {Snapshot{Now: now, AppStatuses: []heartbeat.AppStatus{dead, {ID: "h", Name: "1@h", AppType: "worker",
			TTL: 30 * time.Second, LastHeartbeat: now.Add(-2 * time.Minute)}}, Pods: heartbeat.NewPodView(nil, nil)}, Plan{},
			now.Add(-2*time.Minute + 30*time.Second + p.HeartbeatGrace + p.Kubernetes.HungWorkerGrace)},
	} {
		require.Equal(t, tc.want, NextChange(tc.snap, tc.plan, p), name)
	}
}

func minTime(ts ...time.Time) time.Time {
	m := ts[0]
	for _, t := range ts[1:] {
		if t.Before(m) {
			m = t
		}
	}
	return m
}

// TestNextChangeRereadsHeldRows: a row held for its second read, or while
// its group comes back, is judged again a period and the margin later.
func TestNextChangeRereadsHeldRows(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 24, 12, 0, 0, 0, time.UTC)
	rows := []heartbeat.AppStatus{{ID: "a", Name: "1@a", AppType: "worker", TTL: 30 * time.Second, LastHeartbeat: now.Add(-time.Hour)}}
	snap := Snapshot{Now: now, AppStatuses: rows, Motion: heartbeat.UnsettledMotion([]string{"a"})}
	require.Equal(t, now.Add(12*time.Second), NextChange(snap, Plan{}, Policy{HeartbeatGrace: 30 * time.Second}))
	snap.Motion = nil
	require.True(t, NextChange(snap, Plan{}, Policy{HeartbeatGrace: 30 * time.Second}).IsZero())
}
