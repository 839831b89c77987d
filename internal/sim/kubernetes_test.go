package sim_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/sim/simkube"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// End-to-end tests of lock-reaper's Kubernetes evidence: a simulated fleet
// in pods, the real pod source (kube.Source over the simulated pod list),
// real passes against real Redis and PostgreSQL.

// kbFleet starts a fleet in pods whose tasks run for minutes, and gives it
// two tasks exclusive on one repository: the first runs, the second waits
// for it. It returns the running task, its owner and the blocked task.
func kbFleet(t *testing.T, cfg sim.Config) (f *sim.Fleet, b *bundle, running, owner, blocked string) {
	t.Helper()
	cfg.Pods.Enabled = true
	cfg.MinTaskDuration, cfg.MaxTaskDuration = 10*time.Minute, 10*time.Minute
	f, b = startFleet(t, cfg)
	repo := sim.RepositoryPRN(sim.NewUUID())
	ids, err := f.SubmitSpecs(b.ctx, sim.TaskSpec{Exclusive: []string{repo}}, sim.TaskSpec{Exclusive: []string{repo}})
	require.NoError(t, err)
	running, blocked = ids[0], ids[1]
	waitState(t, b, running, sim.StateRunning)
	owner, err = b.rdb.Get(b.ctx, sim.TaskKey(running)).Result()
	require.NoError(t, err)
	require.Regexp(t, `^1@`, owner)
	require.Equal(t, sim.StateWaiting, readTask(t, b, blocked).state)
	return f, b, running, owner, blocked
}

// kbPass runs one real pass with the fleet's heartbeat grace; with pods it
// reads them through the simulated API.
func kbPass(t *testing.T, f *sim.Fleet, b *bundle, cfg sim.Config, mode string, pods bool, adjust func(*reaper.Config)) *reaper.Report {
	t.Helper()
	rc := reaper.DefaultConfig()
	rc.HeartbeatRecheck = testenv.HeartbeatRecheck
	rc.HeartbeatGrace = cfg.HeartbeatGrace
	if pods {
		src, err := simkube.NewSource(f)
		require.NoError(t, err)
		rc.PodSource = src
	}
	if adjust != nil {
		adjust(&rc)
	}
	r, err := reaper.New(rc, b.rdb, b.pool, nil)
	require.NoError(t, err)
	rep, err := r.RunOnce(b.ctx, reaper.Options{Mode: mode})
	require.NoError(t, err)
	if pods {
		require.Equal(t, reaper.KubernetesRead, rep.Kubernetes.Read, rep.Kubernetes.Error)
	} else {
		require.Nil(t, rep.Kubernetes)
	}
	return rep
}

func kbFinding(t *testing.T, rep *reaper.Report, key, owner string) reaper.Finding {
	t.Helper()
	for _, fd := range rep.Findings {
		if fd.Key == key && fd.Owner == owner {
			return fd
		}
	}
	t.Fatalf("no finding of %s held by %s in %+v", key, owner, rep.Findings)
	return reaper.Finding{}
}

func kbTask(t *testing.T, rep *reaper.Report, id string) reaper.TaskFinding {
	t.Helper()
	for _, tf := range rep.Tasks {
		if tf.ID == id {
			return tf
		}
	}
	t.Fatalf("no task finding of %s in %+v", id, rep.Tasks)
	return reaper.TaskFinding{}
}

// kbHeld says whether the task lock of id is still owner's.
func kbHeld(t *testing.T, b *bundle, id, owner string) bool {
	t.Helper()
	v, err := b.rdb.Get(b.ctx, sim.TaskKey(id)).Result()
	if errors.Is(err, redis.Nil) {
		return false
	}
	require.NoError(t, err)
	return v == owner
}

// TestKubernetesSameNameRestartCleanedInOnePass: a worker is killed and its
// container restarted under the same name, 1@<pod>, with a new row that
// heartbeats. While the old row is late (past ttl, within ttl + grace), a
// pass by heartbeats alone must wait: the name is alive and the old row may
// only be slow. A pass with the pods sees that the container started after
// the old row's last heartbeat (by more than the clock-skew margin, at the
// API's one-second resolution), so that row's process is dead: its running
// task is lost and its locks are released in that one pass, and the task
// they blocked starts.
func TestKubernetesSameNameRestartCleanedInOnePass(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.HeartbeatGrace = 8 * time.Second // room for both passes while the old row is only late
	f, b, running, owner, blocked := kbFleet(t, cfg)

	require.NoError(t, f.Kill(owner))
	// The container restarts more than the margin after the old row's last
	// heartbeat, even once the API has cut its start to the second.
	time.Sleep(reaper.DefaultClockSkew + sim.DefaultPodTimeResolution + 300*time.Millisecond)
	require.NoError(t, f.Restart(b.ctx, owner))
	pod, _ := podOf(t, f, owner)
	require.EqualValues(t, 1, pod.Container.Restarts)

	rep := kbPass(t, f, b, cfg, reaper.ModeOnce, false, nil)
	fd := kbFinding(t, rep, sim.TaskKey(running), owner)
	require.Equal(t, judge.VerdictPending, fd.Verdict, "by heartbeats the old row is only late")
	require.True(t, kbHeld(t, b, running, owner))
	require.Equal(t, sim.StateRunning, readTask(t, b, running).state)

	rep = kbPass(t, f, b, cfg, reaper.ModeOnce, true, nil)
	fd = kbFinding(t, rep, sim.TaskKey(running), owner)
	require.Equal(t, judge.VerdictTaskLost, fd.Verdict)
	require.Equal(t, reaper.ResultReleased, fd.Result)
	require.False(t, kbHeld(t, b, running, owner))
	tf := kbTask(t, rep, running)
	require.Equal(t, reaper.ResultUpdated, tf.Result)
	require.Equal(t, sim.StateCanceled, readTask(t, b, running).state)
	require.Zero(t, rep.Summary.FindingsByResult[reaper.ResultWouldRelease]+rep.Summary.Deferred, "everything in one pass")
	require.Equal(t, 4, rep.Kubernetes.OwnersByEvidence[heartbeat.PodSeen], "three workers and the API, the restarted one by its live row")

	waitState(t, b, blocked, sim.StateRunning)
	require.Empty(t, f.Violations())
}

// TestKubernetesDeletedPodCleanedWithoutTheGrace: kill -9 with the pod
// deleted; the Deployment's replacement runs under a new name. Once the dead
// row is past its ttl a pass with the pods releases its locks and its task
// (pod-gone), where a pass by heartbeats alone waits for the grace.
func TestKubernetesDeletedPodCleanedWithoutTheGrace(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.HeartbeatGrace = 8 * time.Second
	f, b, running, owner, blocked := kbFleet(t, cfg)
	// A pass sees the pods: only a pod an earlier list showed is gone.
	kbPass(t, f, b, cfg, reaper.ModeOnce, true, nil)

	replacement, err := f.DeletePod(b.ctx, owner)
	require.NoError(t, err)
	require.NotEqual(t, owner, replacement)
	time.Sleep(cfg.WorkerTTL + 300*time.Millisecond)

	rep := kbPass(t, f, b, cfg, reaper.ModeOnce, false, nil)
	require.Equal(t, judge.VerdictPending, kbFinding(t, rep, sim.TaskKey(running), owner).Verdict)
	require.True(t, kbHeld(t, b, running, owner))

	rep = kbPass(t, f, b, cfg, reaper.ModeOnce, true, nil)
	fd := kbFinding(t, rep, sim.TaskKey(running), owner)
	require.Equal(t, judge.VerdictOwnerDead, fd.Verdict)
	require.Equal(t, reaper.ResultReleased, fd.Result)
	require.Equal(t, heartbeat.PodGone, fd.Evidence().Kubernetes.Rule)
	require.Equal(t, reaper.ResultUpdated, kbTask(t, rep, running).Result)
	require.Equal(t, sim.StateCanceled, readTask(t, b, running).state)

	waitState(t, b, blocked, sim.StateRunning)
	require.Empty(t, f.Violations())
}

// TestKubernetesLateButAliveWorkerKept: a worker still runs its task and
// holds its locks, but its heartbeats stop being written, past ttl + grace.
// Its container has run since before its row was created (the nodes' clock
// here 1.5 s ahead, inside the margin, and it fakes no restart), so a pass
// with the pods keeps everything (pending, alive-not-heartbeating) where one
// by heartbeats alone would release it. Past hung_worker_grace the ordinary
// dead-owner rule applies: the locks are released, the task canceled, and
// pulpcore's cancel signal makes the worker abort it.
func TestKubernetesLateButAliveWorkerKept(t *testing.T) {
	t.Parallel()
	const hungGrace = 3 * time.Second
	cfg := testConfig()
	cfg.Pods.NodeClockOffset = 1500 * time.Millisecond
	f, b, running, owner, blocked := kbFleet(t, cfg)
	hung := func(rc *reaper.Config) { rc.Kubernetes.HungWorkerGrace = hungGrace }

	require.NoError(t, f.DelayHeartbeat(owner, time.Hour))
	time.Sleep(cfg.WorkerTTL + cfg.HeartbeatGrace + 300*time.Millisecond)

	rep := kbPass(t, f, b, cfg, reaper.ModeOnce, true, hung)
	fd := kbFinding(t, rep, sim.TaskKey(running), owner)
	require.Equal(t, judge.VerdictPending, fd.Verdict)
	require.Equal(t, heartbeat.PodAliveNotHeartbeating, fd.Evidence().Kubernetes.Rule)
	require.Equal(t, 1, rep.Kubernetes.OwnersByEvidence[heartbeat.PodAliveNotHeartbeating])
	require.True(t, kbHeld(t, b, running, owner))
	require.Equal(t, sim.StateRunning, readTask(t, b, running).state)
	require.Equal(t, sim.StateWaiting, readTask(t, b, blocked).state)

	rep = kbPass(t, f, b, cfg, reaper.ModeAudit, false, nil)
	require.Equal(t, judge.VerdictOwnerDead, kbFinding(t, rep, sim.TaskKey(running), owner).Verdict,
		"by heartbeats alone the live worker would lose its locks")

	time.Sleep(hungGrace)
	rep = kbPass(t, f, b, cfg, reaper.ModeOnce, true, hung)
	fd = kbFinding(t, rep, sim.TaskKey(running), owner)
	require.Equal(t, judge.VerdictOwnerDead, fd.Verdict)
	require.Equal(t, reaper.ResultReleased, fd.Result)
	require.Equal(t, heartbeat.PodHungTooLong, fd.Evidence().Kubernetes.Rule)
	// The cancel signal goes out before the task's update: the live worker
	// may cancel the task itself first, and the update then loses its race.
	require.Contains(t, []reaper.Result{reaper.ResultUpdated, reaper.ResultSkipped}, kbTask(t, rep, running).Result)
	require.Eventually(t, func() bool { return f.Stats().StoppedOnSignal == 1 }, 5*time.Second, 10*time.Millisecond,
		"the worker never aborted its task on the cancel signal")
	// A worker that cancels the task itself passes through canceling, and
	// writes canceled once it has aborted: after its count of stops.
	waitState(t, b, running, sim.StateCanceled)
	waitState(t, b, blocked, sim.StateRunning)
	require.Empty(t, f.Violations())
}
