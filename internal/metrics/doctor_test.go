package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestUnprotectedTasks: a full scan counts its unprotected tasks; a
// registry-only pass, which cannot see a lock is absent, leaves the count.
func TestUnprotectedTasks(t *testing.T) {
	t.Parallel()
	m, reg := setup(t)
	rep := completedReport()
	rep.Tasks = append(rep.Tasks,
		reaper.TaskFinding{TaskJudgement: &judge.TaskJudgement{ID: "6f1c0000-0000-4000-8000-000000000003", Verdict: unprotectedVerdict, Action: judge.ActionReport}},
		reaper.TaskFinding{TaskJudgement: &judge.TaskJudgement{ID: "6f1c0000-0000-4000-8000-000000000004", Verdict: unprotectedVerdict, Action: judge.ActionReport}})
	m.Observe(rep)
	require.Equal(t, 2.0, testutil.ToFloat64(m.doctor.unprotected))

	registry := completedReport()
	registry.Scanned.FullScan = false
	m.Observe(registry)
	require.Equal(t, 2.0, testutil.ToFloat64(m.doctor.unprotected))

	m.Observe(completedReport())
	require.Equal(t, 0.0, testutil.ToFloat64(m.doctor.unprotected))

	m.DoctorCheck("redis-eviction", 2)
	m.DoctorCheck("redis-role", 0)
	require.Equal(t, 2.0, testutil.ToFloat64(m.doctor.checkStatus.WithLabelValues("redis-eviction")))
	problems, err := testutil.GatherAndLint(reg, NameUnprotectedTasks, NameDoctorCheckStatus)
	require.NoError(t, err)
	require.Empty(t, problems)
	n, err := testutil.GatherAndCount(reg, NameDoctorCheckStatus)
	require.NoError(t, err)
	require.Equal(t, 2, n)
}

// TestDoctorStatusAbsentBeforeDoctor: no check series exists before the
// doctor has run, so no alert mistakes "not checked" for "ok".
func TestDoctorStatusAbsentBeforeDoctor(t *testing.T) {
	t.Parallel()
	_, reg := setup(t)
	n, err := testutil.GatherAndCount(reg, NameDoctorCheckStatus)
	require.NoError(t, err)
	require.Zero(t, n)
}
