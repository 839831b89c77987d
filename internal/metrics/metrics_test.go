package metrics

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

var started = time.Date(2026, 7, 24, 10, 0, 0, 0, time.UTC)

// completedReport is a pass that released a task lock and an exclusive
// holding of a dead owner, canceled its task, and holds a suspect back.
func completedReport() *reaper.Report {
	return &reaper.Report{
		Mode: reaper.ModeOnce, StartedAt: started, DurationMS: 1500,
		Scanned: reaper.Scanned{Keys: 7, TaskLocks: 3, ResourceHoldings: 4, Ignored: 1, FullScan: true},
		Findings: []reaper.Finding{
			{Judgement: &judge.Judgement{Holding: judge.Holding{Key: "task:6f1c0000-0000-4000-8000-000000000001", Kind: judge.KindTask, Owner: "1@worker-7"}, Verdict: judge.VerdictOwnerDead}, Result: reaper.ResultReleased},
			{Judgement: &judge.Judgement{Holding: judge.Holding{Key: "pulp:resource_lock:prn:repo:1", Kind: judge.KindExclusive, Owner: "1@worker-7"}, Verdict: judge.VerdictOwnerDead}, Result: reaper.ResultReleased},
			{Judgement: &judge.Judgement{Holding: judge.Holding{Key: "task:6f1c0000-0000-4000-8000-000000000002", Kind: judge.KindTask, Owner: "2@worker-8"}, Verdict: judge.VerdictTaskMissing}, Result: reaper.ResultSuspected},
		},
		Tasks: []reaper.TaskFinding{
			{TaskJudgement: &judge.TaskJudgement{ID: "6f1c0000-0000-4000-8000-000000000001", Verdict: judge.VerdictLost}, Result: reaper.ResultUpdated},
		},
		Summary: reaper.Summary{
			FindingsByResult: map[reaper.Result]int{reaper.ResultReleased: 2, reaper.ResultSuspected: 1},
			TasksByResult:    map[reaper.Result]int{reaper.ResultUpdated: 1},
		},
	}
}

func setup(t *testing.T) (*Metrics, *prometheus.Registry) {
	t.Helper()
	m := New("1.2.3")
	reg, err := NewProcessRegistry(m)
	require.NoError(t, err)
	return m, reg
}

func TestObserveCompletedPass(t *testing.T) {
	t.Parallel()
	m, reg := setup(t)

	require.Equal(t, OutcomeSuccess, m.Observe(completedReport()))

	require.Equal(t, 1.0, testutil.ToFloat64(m.passes.WithLabelValues("success")))
	require.Equal(t, 0.0, testutil.ToFloat64(m.passes.WithLabelValues("failed")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.released.WithLabelValues("owner-dead", "task")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.released.WithLabelValues("owner-dead", "exclusive")))
	require.Equal(t, 0.0, testutil.ToFloat64(m.released.WithLabelValues("task-missing", "task")), "a suspect is not released")
	require.Equal(t, 1.0, testutil.ToFloat64(m.tasksUpdated.WithLabelValues("lost")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.suspects.WithLabelValues("holding")))
	require.Equal(t, 3.0, testutil.ToFloat64(m.holdingsScanned.WithLabelValues("task")))
	require.Equal(t, 4.0, testutil.ToFloat64(m.holdingsScanned.WithLabelValues("resource")))
	require.Equal(t, 7.0, testutil.ToFloat64(m.keysScanned))
	require.Equal(t, 1.0, testutil.ToFloat64(m.ignoredKeys))
	require.Equal(t, 1.0, testutil.ToFloat64(m.scans.WithLabelValues("full")))
	require.Equal(t, float64(started.Unix())+1.5, testutil.ToFloat64(m.lastSuccess))
	require.Equal(t, uint64(1), histogramCount(t, reg, NamePassDuration))
}

func TestFailedPassKeepsGaugesAndLastSuccess(t *testing.T) {
	t.Parallel()
	m, reg := setup(t)
	require.Equal(t, OutcomeFailed, m.Observe(&reaper.Report{StartedAt: started, Error: "read task locks: connection refused"}))
	require.NotContains(t, familyNames(t, reg), NameLastSuccess, "absent until a pass completes")

	m.Observe(completedReport())
	failed := completedReport()
	failed.StartedAt = started.Add(time.Minute)
	failed.Error = "release batch: i/o timeout"
	failed.Scanned = reaper.Scanned{}
	require.Equal(t, OutcomeFailed, m.Observe(failed))

	require.Equal(t, 2.0, testutil.ToFloat64(m.passes.WithLabelValues("failed")))
	require.Equal(t, float64(started.Unix())+1.5, testutil.ToFloat64(m.lastSuccess), "the last success stays")
	require.Equal(t, 7.0, testutil.ToFloat64(m.keysScanned), "gauges describe the last completed pass")
	require.Equal(t, 2.0, testutil.ToFloat64(m.released.WithLabelValues("owner-dead", "task")),
		"releases of a pass that failed later still happened")
}

func TestGuardedAndSkippedPasses(t *testing.T) {
	t.Parallel()
	m, _ := setup(t)
	guarded := completedReport()
	guarded.Guards = []reaper.Guard{{Name: "mass-death", Reason: "4 of 6 workers dead"}}
	require.Equal(t, OutcomeGuarded, m.Observe(guarded))
	require.Equal(t, 1.0, testutil.ToFloat64(m.guardTrips.WithLabelValues("mass-death")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.passes.WithLabelValues("guarded")))

	skipped := &reaper.Report{StartedAt: started.Add(time.Hour), Skipped: "another lock-reaper holds the advisory lock"}
	require.Equal(t, OutcomeSkipped, m.Observe(skipped))
	require.True(t, OutcomeSkipped.Completed())
	require.Equal(t, float64(started.Add(time.Hour).Unix()), testutil.ToFloat64(m.lastSuccess))
	require.Equal(t, 1.0, testutil.ToFloat64(m.scans.WithLabelValues("full")), "a skipped pass read nothing")
	require.Equal(t, 7.0, testutil.ToFloat64(m.keysScanned))
}

func TestTicksSkipped(t *testing.T) {
	t.Parallel()
	m, _ := setup(t)
	m.TicksSkipped(TickOverlap, 2)
	m.TicksSkipped(TickBackoff, 0)
	require.Equal(t, 2.0, testutil.ToFloat64(m.ticksSkipped.WithLabelValues(TickOverlap)))
	require.Equal(t, 0.0, testutil.ToFloat64(m.ticksSkipped.WithLabelValues(TickBackoff)))
}

// TestNamingAndLabels runs promlint over everything exported and checks that
// no label carries a key, an owner or a task id.
func TestNamingAndLabels(t *testing.T) {
	t.Parallel()
	m, reg := setup(t)
	rep := completedReport()
	rep.Guards = []reaper.Guard{{Name: "max-releases", Reason: "limit"}}
	m.Observe(rep)
	m.TicksSkipped(TickOverlap, 1)

	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)

	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "lock_reaper_") {
			require.True(t, strings.HasPrefix(mf.GetName(), "go_") || strings.HasPrefix(mf.GetName(), "process_"), mf.GetName())
			continue
		}
		for _, metric := range mf.GetMetric() {
			for _, lp := range metric.GetLabel() {
				for _, f := range rep.Findings {
					require.NotContains(t, []string{f.Key, f.Owner, f.TaskID()}, lp.GetValue(), mf.GetName())
				}
				require.NotContains(t, lp.GetValue(), "@", "%s{%s} looks like an owner", mf.GetName(), lp.GetName())
			}
		}
	}
}

func TestBuildInfo(t *testing.T) {
	t.Parallel()
	_, reg := setup(t)
	mf := family(t, reg, NameBuildInfo)
	require.Len(t, mf.GetMetric(), 1)
	got := map[string]string{}
	for _, lp := range mf.GetMetric()[0].GetLabel() {
		got[lp.GetName()] = lp.GetValue()
	}
	require.Equal(t, map[string]string{"version": "1.2.3", "goversion": runtime.Version()}, got)
	require.Equal(t, 1.0, mf.GetMetric()[0].GetGauge().GetValue())
}

func TestPassRegistryHasNoRuntimeMetrics(t *testing.T) {
	t.Parallel()
	reg, err := NewPassRegistry(New("test"))
	require.NoError(t, err)
	for _, name := range familyNames(t, reg) {
		require.True(t, strings.HasPrefix(name, "lock_reaper_"), name)
	}
}

func familyNames(t *testing.T, reg prometheus.Gatherer) []string {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	return names
}

func family(t *testing.T, reg prometheus.Gatherer, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	t.Fatalf("no metric family %s", name)
	return nil
}

func histogramCount(t *testing.T, reg prometheus.Gatherer, name string) uint64 {
	t.Helper()
	return family(t, reg, name).GetMetric()[0].GetHistogram().GetSampleCount()
}

func TestKubernetesMetrics(t *testing.T) {
	m := New("test")
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, m.Register(reg))
	m.Observe(&reaper.Report{Kubernetes: &reaper.KubernetesReport{Read: reaper.KubernetesRead, OwnersByEvidence: map[heartbeat.PodRule]int{heartbeat.PodAliveNotHeartbeating: 1, heartbeat.PodSeen: 3}}})
	m.Observe(&reaper.Report{Kubernetes: &reaper.KubernetesReport{Read: reaper.KubernetesUnavailable, Error: "forbidden"}})
	m.Observe(&reaper.Report{})
	require.Equal(t, 1.0, testutil.ToFloat64(m.kube.reads.WithLabelValues("ok")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.kube.reads.WithLabelValues("unavailable")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.kube.owners.WithLabelValues("alive-not-heartbeating")))
	require.Equal(t, 3.0, testutil.ToFloat64(m.kube.owners.WithLabelValues("pod-seen")))
	require.Equal(t, 0.0, testutil.ToFloat64(m.kube.owners.WithLabelValues("pod-gone")))
}
