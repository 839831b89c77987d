package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/explain"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// TestJSONShapes pins the JSON every command prints (the report of a pass,
// explain, locks) to a golden file, with every member the shapes have
// filled in: scripts and log pipelines read these names, so a change of one
// must be deliberate (go test ./cli -run TestJSONShapes -update). The
// report also reads back into the same document.
func TestJSONShapes(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { v := at.Add(-d); return &v }
	age := func(d time.Duration) *judge.Duration { v := judge.Duration(d); return &v }
	late := heartbeat.Late
	pod := &heartbeat.PodEvidence{Rule: heartbeat.PodAliveNotHeartbeating, Pod: heartbeat.Pod{
		Name: "pulp-worker-0", UID: "u-1", Phase: "Running", Reason: "NodeLost", Terminating: true, Ready: true, ContainersReady: true,
		Disruption: "DeletionByTaintManager", StartTime: ago(time.Hour),
		Container: &heartbeat.Container{Name: "worker", Running: true, StartedAt: ago(time.Hour), Restarts: 2,
			LastTerminated: &heartbeat.Termination{Reason: "OOMKilled", ExitCode: 137, FinishedAt: ago(2 * time.Hour)}},
		API: &heartbeat.Container{Name: "api", FinishedAt: ago(time.Minute), Terminated: &heartbeat.Termination{Reason: "Error", ExitCode: 1}},
	}}
	ev := judge.Evidence{OwnerLiveness: heartbeat.Dead, HeartbeatAge: age(90 * time.Second), TaskState: judge.StateCompleted,
		FinishedAge: age(30 * time.Minute), AppLock: "1@api", AppLockLiveness: &late, Via: "task:00000000-0000-4000-8000-000000000001", Kubernetes: pod}
	task := passtest.WithEvidence(judge.Judgement{Holding: judge.Holding{Key: "task:00000000-0000-4000-8000-000000000001", Owner: "1@dead", Kind: judge.KindTask, Registered: true},
		Verdict: judge.VerdictTaskFinished, Action: judge.ActionRelease, FirstSeen: ago(time.Minute), Deferred: "max_releases"}, ev)
	res := passtest.WithEvidence(judge.Judgement{Holding: judge.Holding{Key: "pulp:resource_lock:prn:core.domain:d", Owner: "1@dead", Kind: judge.KindShared},
		Verdict: judge.VerdictOwnerDead, Action: judge.ActionRelease}, judge.Evidence{OwnerLiveness: heartbeat.Gone})
	lost := judge.TaskJudgement{ID: "00000000-0000-4000-8000-000000000002", Name: "pulpcore.app.tasks.sync", Verdict: judge.VerdictTaskLost,
		Action: judge.ActionUpdate, Owner: "1@dead", AppLockID: "00000000-0000-4000-8000-0000000000a1", StateBefore: judge.StateRunning,
		StateAfter: judge.StateWaiting, ClearClaim: true, Deferred: "mass-death guard", FirstSeen: ago(time.Minute), AfterRelease: "task:x"}
	canceled := judge.TaskJudgement{ID: "00000000-0000-4000-8000-000000000004", Verdict: judge.VerdictLost, Action: judge.ActionUpdate, Owner: "1@dead",
		StateBefore: judge.StateRunning, StateAfter: judge.StateCanceled}
	unguarded := []reaper.UnguardedResource{{Resource: "prn:r", Need: judge.KindExclusive, OtherHolders: []reaper.ResourceHolder{{Owner: "2@w", Kind: judge.KindExclusive}}}}
	rep := &reaper.Report{
		Mode: reaper.ModeOnce, StartedAt: at, DurationMS: 1234, DBNow: at, Skipped: "", Notes: []string{"a note"}, Error: "an error",
		Scanned:    reaper.Scanned{Keys: 10, TaskLocks: 2, ResourceHoldings: 3, Owners: 2, Tasks: 4, Ignored: 1, FullScan: true},
		LockOwners: reaper.OwnerReportsOf([]judge.OwnerReport{{Name: "1@dead", Liveness: "dead", HeartbeatAge: age(time.Hour), Holdings: 2, Kubernetes: pod}, {Name: "immediate-x", Liveness: "gone", Holdings: 1}}),
		Findings:   []reaper.Finding{{Judgement: &task, Result: reaper.ResultReleased}, {Judgement: &res, Result: reaper.ResultDeferred}},
		Tasks: []reaper.TaskFinding{{TaskJudgement: &lost, Result: reaper.ResultUpdated, Resources: unguarded},
			{TaskJudgement: &canceled, Result: reaper.ResultUpdated}},
		Ignored:     []reaper.Ignored{{Key: "task:nope", Type: "list", Reason: "not a string"}},
		SignalCheck: &reaper.SignalCheck{Primary: "run_id r, replication id i", Checked: 5, Republished: 2, More: true},
		Guards: append(reaper.GuardsOf([]judge.Guard{{Name: judge.GuardMaxReleases, Wanted: 12, Limit: 10}}),
			reaper.Guard{Name: judge.GuardUncommittedTaskWrite, Reason: "held", UncommittedWrite: &reaper.UncommittedWrite{
				PID: 4242, TransactionAge: reaper.Seconds(75 * time.Second), AgeFrom: reaper.AgeFromActivity, Sessions: 1, Held: 3}}),
		Kubernetes: &reaper.KubernetesReport{Read: reaper.KubernetesRead, Where: "pulp/app=worker", Pods: 3,
			OwnersByEvidence: map[heartbeat.PodRule]int{heartbeat.PodAliveNotHeartbeating: 1, reaper.PodRuleNone: 2}},
		Summary: reaper.Summary{HoldingsByVerdict: map[judge.Verdict]int{judge.VerdictOwnerDead: 1, judge.VerdictTaskFinished: 1},
			FindingsByResult: map[reaper.Result]int{reaper.ResultReleased: 1}, TasksByVerdict: map[judge.Verdict]int{judge.VerdictTaskLost: 1},
			TasksByResult: map[reaper.Result]int{reaper.ResultUpdated: 1}, Released: 1, TasksUpdated: 1, Suspects: 0, Deferred: 1},
	}
	row := &pulpdb.TaskRow{Task: judge.Task{ID: "00000000-0000-4000-8000-000000000003", Name: "sync", State: judge.StateWaiting,
		AppLockID: "00000000-0000-4000-8000-0000000000a2", Reserved: []string{"prn:r", "shared:prn:d"}, FinishedAt: ago(time.Second)}, Created: at}
	holder := explain.Holder{HoldingRef: reaper.HoldingRef{Key: "pulp:resource_lock:prn:r", Kind: judge.KindExclusive, Owner: "1@dead"}, Liveness: heartbeat.Dead,
		OwnerView: reaper.OwnerView{HeartbeatAge: reaper.SecondsOf(age(time.Hour)), Kubernetes: reaper.PodEvidenceOf(pod)}, Task: &explain.TaskRef{ID: "t", Name: "n", State: "running"}, Own: true, Blocks: true,
		HoldingVerdict: reaper.HoldingVerdict{Verdict: judge.VerdictOwnerDead, Action: judge.ActionRelease, Deferred: "d"}}
	ex := explain.Explanation{TaskID: row.ID, DBNow: at, Task: row,
		Claim:     &explain.Process{AppLockID: "a", Name: "1@w", AppType: "worker", Liveness: heartbeat.Alive, HeartbeatAge: reaper.SecondsOf(age(time.Second))},
		TaskLocks: []explain.Holder{holder}, Resources: []explain.ResourceNeed{{Resource: "prn:r", Need: judge.KindExclusive, Holders: []explain.Holder{holder}}},
		Ahead: []explain.TaskAhead{{TaskRow: *row, Conflicts: []string{"prn:r"}, Claim: &explain.Process{AppLockID: "b", Liveness: heartbeat.Gone}}}, AheadTotal: 1,
		TaskVerdict: reaper.TaskVerdictOf(&lost), Unprotected: &explain.Unprotected{Unguarded: []string{"prn:r"}, OtherHolders: []explain.Holder{holder}},
		Passes: &explain.Passes{Within: reaper.Seconds(time.Hour), Recorded: true, Unread: "u"}, Status: explain.StatusBlocked, Conclusion: "blocked"}
	line := LockLine{HoldingRef: reaper.HoldingRef{Key: "k", Kind: judge.KindShared, Owner: "o"}, OwnerLiveness: "dead",
		OwnerView: reaper.OwnerView{HeartbeatAge: reaper.SecondsOf(age(time.Minute)), Kubernetes: reaper.PodEvidenceOf(pod)},
		Resource:  "r", TaskID: "t", Task: "t", TaskState: "running", HoldingVerdict: reaper.HoldingVerdict{Verdict: judge.VerdictOwnerDead, Action: judge.ActionRelease, Deferred: "d"}, Registered: true}
	counts := OwnerCounts{Owner: "o", OwnerLiveness: "dead", HeartbeatAge: reaper.SecondsOf(age(time.Minute)), Holdings: 2,
		ByKind: map[judge.Kind]int{judge.KindShared: 2}, ByVerdict: map[judge.Verdict]int{judge.VerdictOwnerDead: 2}}

	var got bytes.Buffer
	require.NoError(t, writeJSONReport(&got, formatJSONPretty, rep))
	for _, v := range []any{ex, line, counts} {
		require.NoError(t, writeJSON(&got, formatJSONPretty, v))
	}
	golden := filepath.Join("testdata", "json-shapes.json")
	if *updateGolden {
		require.NoError(t, os.WriteFile(golden, got.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), got.String())

	// The report reads back into the same document.
	var one bytes.Buffer
	require.NoError(t, writeJSONReport(&one, formatJSON, rep))
	var back reaper.Report
	require.NoError(t, json.Unmarshal(one.Bytes(), &back))
	var again bytes.Buffer
	require.NoError(t, writeJSONReport(&again, formatJSON, &back))
	require.Equal(t, one.String(), again.String())
}
