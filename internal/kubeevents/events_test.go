package kubeevents

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/heartbeat/kube"
	"github.com/lock-reaper/lock-reaper/internal/testing/kubeapi"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

var self = kube.PodRef{Namespace: "pulp", Name: "lock-reaper-7c9f-abcde", UID: "u-self"}

func released(owner string, kind judge.Kind) reaper.Finding {
	return reaper.Finding{Judgement: &judge.Judgement{Holding: judge.Holding{Owner: owner, Kind: kind}, Verdict: judge.VerdictOwnerDead}, Result: reaper.ResultReleased}
}

func updated(owner string, requeue bool, state string) reaper.TaskFinding {
	return reaper.TaskFinding{TaskJudgement: &judge.TaskJudgement{Owner: owner, ClearClaim: requeue, StateAfter: state, Verdict: judge.VerdictLost}, Result: reaper.ResultUpdated}
}

func withPod(name, uid string) *reaper.PodEvidence {
	return reaper.PodEvidenceOf(&heartbeat.PodEvidence{Rule: heartbeat.PodContainerEnded, Pod: heartbeat.Pod{Name: name, UID: uid}})
}

// deadWorkerPass: a pass that released a dead worker's locks and ended or
// requeued its tasks, the worker's pod in the pass's list; and a second
// dead owner, a VM, whose pod no list shows.
func deadWorkerPass() *reaper.Report {
	rep := &reaper.Report{Mode: reaper.ModeOnce,
		LockOwners: []reaper.OwnerReport{
			{Name: "1@example-worker-1", Kubernetes: withPod("example-worker-1", "u-1")},
			{Name: "1@vm-7"},
			{Name: "1@example-worker-2", Kubernetes: reaper.PodEvidenceOf(&heartbeat.PodEvidence{Rule: heartbeat.PodGone, Pod: heartbeat.Pod{Name: "example-worker-2"}})},
			{Name: "1@example-worker-3", Kubernetes: withPod("example-worker-3", "u-3")},
		}}
	for range 3 {
		rep.Findings = append(rep.Findings, released("1@example-worker-1", judge.KindTask))
	}
	for range 9 {
		rep.Findings = append(rep.Findings, released("1@example-worker-1", judge.KindShared))
	}
	rep.Findings = append(rep.Findings, released("1@vm-7", judge.KindTask), released("1@example-worker-2", judge.KindExclusive),
		reaper.Finding{Judgement: &judge.Judgement{Holding: judge.Holding{Owner: "1@example-worker-3"}}, Result: reaper.ResultSuspected})
	rep.Tasks = []reaper.TaskFinding{updated("1@example-worker-1", false, judge.StateFailed), updated("1@example-worker-1", false, judge.StateFailed),
		updated("1@example-worker-1", false, judge.StateCanceled), updated("1@example-worker-1", true, judge.StateWaiting)}
	return rep
}

// TestOfAggregatesPerPodAndReason: one Event per pod and reason, whatever
// the number of locks and tasks, with the counts; the owners no list shows
// a pod of are told on the reaper's own pod; what was not done has none.
func TestOfAggregatesPerPodAndReason(t *testing.T) {
	t.Parallel()
	events := Of(deadWorkerPass(), "pulp", self)
	var got []string
	for _, e := range events {
		got = append(got, e.Regarding.Name+" "+e.Type+" "+e.Reason+" "+e.Action+": "+e.Note)
	}
	require.Equal(t, []string{
		"example-worker-1 Normal LocksReleased Release: lock-reaper released 12 locks held by 1@example-worker-1 (9 resource locks, 3 task locks)",
		"example-worker-1 Normal TaskRequeued Requeue: lock-reaper requeued 1 task claimed by 1@example-worker-1 (1 waiting)",
		"example-worker-1 Warning TasksCanceled Cancel: lock-reaper ended 3 lost tasks of 1@example-worker-1 (2 failed, 1 canceled)",
		"lock-reaper-7c9f-abcde Normal LocksReleased Release: lock-reaper released 2 locks held by 2 owners: 1@example-worker-2: 1 (1 resource lock); 1@vm-7: 1 (1 task lock)",
	}, got)
	require.Equal(t, kube.PodRef{Namespace: "pulp", Name: "example-worker-1", UID: "u-1"}, events[0].Regarding)
	require.Equal(t, self, events[3].Regarding)

	require.Len(t, Of(deadWorkerPass(), "pulp", kube.PodRef{}), 3, "without the reaper's own pod, only the workers' Events")
	audit := deadWorkerPass()
	audit.Mode = reaper.ModeAudit
	require.Empty(t, Of(audit, "pulp", self), "a dry run did nothing")
	require.Empty(t, Of(&reaper.Report{Mode: reaper.ModeOnce, Skipped: "another reaper holds the pass lock"}, "pulp", self))
	require.Empty(t, Of(&reaper.Report{Mode: reaper.ModeOnce}, "pulp", self))
}

// massDeathPass: the mass-death guard held back two dead workers' locks
// and a task.
func massDeathPass() *reaper.Report {
	held := func(owner string) reaper.Finding {
		return reaper.Finding{Judgement: &judge.Judgement{Holding: judge.Holding{Owner: owner, Kind: judge.KindTask},
			Verdict: judge.VerdictOwnerDead, Deferred: judge.DeferredMassDeath}, Result: reaper.ResultDeferred}
	}
	return &reaper.Report{Mode: reaper.ModeOnce,
		LockOwners: []reaper.OwnerReport{{Name: "1@dead-a"}, {Name: "1@dead-b"}},
		Findings:   []reaper.Finding{held("1@dead-a"), held("1@dead-a"), held("1@dead-b")},
		Tasks: []reaper.TaskFinding{{TaskJudgement: &judge.TaskJudgement{Owner: "1@dead-a", Deferred: judge.DeferredMassDeath},
			Result: reaper.ResultDeferred}},
		Guards: []reaper.Guard{{Name: judge.GuardMassDeath, Reason: reaper.GuardReason(judge.Guard{Name: judge.GuardMassDeath,
			Count: judge.MassDeathCount{Dead: 2, Workers: 3, Newest: time.Minute, Oldest: time.Minute}, MaxDeadFraction: 0.5})}},
	}
}

// TestOfMassDeathHold: the guard's hold is one Warning about the reaper's
// own pod, with what it counted and what ends it.
func TestOfMassDeathHold(t *testing.T) {
	t.Parallel()
	events := Of(massDeathPass(), "pulp", self)
	require.Len(t, events, 1)
	e := events[0]
	require.Equal(t, self, e.Regarding)
	require.Equal(t, []string{corev1.EventTypeWarning, ReasonMassDeathHold, "Hold"}, []string{e.Type, e.Reason, e.Action})
	require.True(t, strings.HasPrefix(e.Note, "lock-reaper holds back 3 locks and 1 task of 2 dead owners: 2 of 3 worker rows are dead, dead for 1m"), e.Note)
	require.Contains(t, e.Note, "lock-reaper release --owner NAME --dry-run")
	require.Contains(t, e.Note, "lock-reaper once --force")
	require.Empty(t, Of(massDeathPass(), "pulp", kube.PodRef{}), "no pod to tell it on")
}

// TestRecorderAgainstTheAPIServer: the Events reach the API server; a
// refused write is counted, logged once with the fix, and a hung API
// server costs the timeout, no more.
func TestRecorderAgainstTheAPIServer(t *testing.T) {
	t.Parallel()
	api := kubeapi.New(t)
	sink, err := kube.NewEventSink(api.Config(), self.Name)
	require.NoError(t, err)
	var logs testenv.SyncBuffer
	r := &Recorder{Sink: sink, Namespace: "pulp", Self: self, Timeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	require.Zero(t, r.Record(context.Background(), deadWorkerPass()))
	require.Len(t, api.Events(), 4)
	require.Empty(t, logs.String())

	api.FailEvents(http.StatusForbidden)
	require.Equal(t, 4, r.Record(context.Background(), deadWorkerPass()))
	require.Len(t, api.Events(), 4)
	require.Equal(t, 1, strings.Count(logs.String(), "kubernetes events not recorded"), logs.String())
	require.Contains(t, logs.String(), "grant create and patch on events")

	api.FailEvents(0)
	api.Hang(true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a pass cut short still has its Events written, within the bound
	start := time.Now()
	require.Equal(t, 1, r.Record(ctx, massDeathPass()))
	require.Less(t, time.Since(start), 5*time.Second)

	var none *Recorder
	require.Zero(t, none.Record(context.Background(), deadWorkerPass()))
}
