package reaper

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// kpSource is a PodSource answering a fixed list or a fixed error.
type kpSource struct {
	pods []heartbeat.Pod
	err  error
}

func (s kpSource) ListPods(context.Context) ([]heartbeat.Pod, error) { return s.pods, s.err }
func (s kpSource) Where() string                                     { return "namespace test" }

func kpRunning(name string, started time.Time, restarts int32) heartbeat.Pod {
	return heartbeat.Pod{Name: name, Phase: "Running", Container: &heartbeat.Container{Name: "worker", Running: true, StartedAt: &started, Restarts: restarts}}
}

// uuid7At is a version 7 UUID created at t, as pulpcore names its rows.
func uuid7At(t time.Time) string {
	ms := uint64(t.UnixMilli())
	v4 := newUUID()
	return fmt.Sprintf("%08x-%04x-7%s", ms>>16, ms&0xffff, v4[15:])
}

// kpRestart builds a worker 1@w that died 40 s ago (late, within the grace)
// and whose container restarted 35 s ago under the same name, the new process
// already heartbeating; its running task holds a lock and an exclusive resource.
func kpRestart(t *testing.T) (f *fixture, taskID string, pods []heartbeat.Pod) {
	f = newFixture(t)
	f.worker("1@live", time.Second)
	old := f.worker("1@w", 40*time.Second)
	f.worker("1@w", time.Second)
	res := "prn:core.domain:" + newUUID()
	taskID = f.task(StateRunning, old, []string{res}, -1)
	f.acquire("1@w", taskID, []string{res}, false)
	now := time.Now()
	return f, taskID, []heartbeat.Pod{kpRunning("live", now.Add(-time.Hour), 0), kpRunning("w", now.Add(-35*time.Second), 1)}
}

func TestKubernetesPassSameNameRestartCleanedInOnePass(t *testing.T) {
	t.Parallel()
	f, taskID, pods := kpRestart(t)
	rep := f.pass(f.reaper(func(c *Config) { c.PodSource = kpSource{pods: pods} }), ModeOnce)
	require.Equal(t, KubernetesRead, rep.Kubernetes.Read)
	fd := findingFor(rep, TaskKeyPrefix+taskID, "1@w")
	require.NotNil(t, fd)
	require.Equal(t, VerdictTaskLost, fd.Verdict)
	require.Equal(t, ResultReleased, fd.Result)
	require.Empty(t, f.get(TaskKeyPrefix+taskID))
	state, _, _, _ := f.taskRow(taskID)
	require.Equal(t, StateCanceled, state)
	require.Equal(t, 2, rep.Kubernetes.OwnersByEvidence[heartbeat.PodSeen], "1@live and 1@w, whose live row decides")
}

func TestKubernetesPassUnavailableJudgesAsWithout(t *testing.T) {
	t.Parallel()
	f, taskID, _ := kpRestart(t)
	rep := f.pass(f.reaper(func(c *Config) { c.PodSource = kpSource{err: errors.New("pods is forbidden")} }), ModeOnce)
	require.Equal(t, KubernetesUnavailable, rep.Kubernetes.Read)
	require.Contains(t, rep.Kubernetes.Error, "forbidden")
	fd := findingFor(rep, TaskKeyPrefix+taskID, "1@w")
	require.NotNil(t, fd)
	require.Equal(t, VerdictPending, fd.Verdict, "without pods the old row is only late")
	require.Equal(t, "1@w", f.get(TaskKeyPrefix+taskID))
	state, _, _, _ := f.taskRow(taskID)
	require.Equal(t, StateRunning, state)
}

func TestKubernetesPassLateButAliveWorkerKept(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.worker("1@live", time.Second)
	now := time.Now()
	slow := uuid7At(now.Add(-time.Hour))
	_, err := f.db.Pool.Exec(f.ctx, `INSERT INTO core_appstatus (pulp_id, app_type, name, ttl, last_heartbeat)
		VALUES ($1, 'worker', '1@slow', interval '30 seconds', now() - interval '90 seconds')`, slow)
	require.NoError(t, err)
	res := "prn:core.domain:" + newUUID()
	taskID := f.task(StateRunning, slow, []string{res}, -1)
	f.acquire("1@slow", taskID, []string{res}, false)
	pods := []heartbeat.Pod{kpRunning("live", now.Add(-2*time.Hour), 0), kpRunning("slow", now.Add(-2*time.Hour), 0)}

	rep := f.pass(f.reaper(func(c *Config) { c.PodSource = kpSource{pods: pods} }), ModeOnce)
	fd := findingFor(rep, TaskKeyPrefix+taskID, "1@slow")
	require.NotNil(t, fd)
	require.Equal(t, VerdictPending, fd.Verdict)
	require.Equal(t, heartbeat.PodAliveNotHeartbeating, fd.Evidence().Kubernetes.Rule)
	require.Equal(t, "1@slow", f.get(TaskKeyPrefix+taskID))
	require.Equal(t, "1@slow", f.get(ResourceKeyPrefix+res))
	state, _, _, _ := f.taskRow(taskID)
	require.Equal(t, StateRunning, state)
	require.Equal(t, 1, rep.Kubernetes.OwnersByEvidence[heartbeat.PodAliveNotHeartbeating])

	// Without Kubernetes the same worker loses its locks and its task.
	rep = f.pass(f.reaper(nil), ModeOnce)
	require.Nil(t, rep.Kubernetes)
	require.Equal(t, VerdictOwnerDead, findingFor(rep, TaskKeyPrefix+taskID, "1@slow").Verdict)
	require.Empty(t, f.get(TaskKeyPrefix+taskID))
}
