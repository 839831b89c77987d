package judge

import (
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/stretchr/testify/require"
)

// kjAt is a time ago before jtNow.
func kjAt(ago time.Duration) *time.Time {
	t := jtNow.Add(-ago)
	return &t
}

// kjPod is a running, ready pod accepted three hours ago whose worker
// container runs since started after restarts restarts.
func kjPod(name string, started time.Duration, restarts int32) heartbeat.Pod {
	c := &heartbeat.Container{Name: "worker", Running: true, StartedAt: kjAt(started), Restarts: restarts}
	if restarts > 0 {
		c.LastTerminated = &heartbeat.Termination{Reason: "OOMKilled", ExitCode: 137, FinishedAt: kjAt(started + time.Second)}
	}
	return heartbeat.Pod{Name: name, UID: "uid-" + name, Phase: "Running", Ready: true, ContainersReady: true, StartTime: kjAt(3 * time.Hour), Container: c}
}

// kjWorld is a fleet of a live worker and the worker 1@w, heartbeat age
// ago, whose running task holds its lock and an exclusive resource.
func kjWorld(age time.Duration) (w *jtWorld, task Holding, res Holding) {
	w = jtNewWorld()
	for _, n := range []string{"1@live-0", "1@live-1", "1@live-2"} {
		w.worker(n, time.Second)
	}
	row := w.worker("1@w", age)
	for i := range w.snap.AppStatuses {
		w.snap.AppStatuses[i].PulpCreated = jtNow.Add(-time.Hour)
	}
	id := w.task(StateRunning, row, "prn:core.domain:d1")
	task, res = w.taskLock(id, "1@w"), w.resource("prn:core.domain:d1", KindExclusive, "1@w")
	return w, task, res
}

// The verdicts of a worker's task lock with each pod state Kubernetes
// leaves, against the same snapshot without pods.
func TestJudgeKubernetesPodStates(t *testing.T) {
	t.Parallel()
	ready := kjPod("w", 2*time.Hour, 0)
	with := func(p heartbeat.Pod, f func(*heartbeat.Pod)) heartbeat.Pod { f(&p); return p }
	ended := with(ready, func(p *heartbeat.Pod) {
		c := *p.Container
		c.Running, c.StartedAt = false, nil
		c.Terminated = &heartbeat.Termination{Reason: "OOMKilled", ExitCode: 137, FinishedAt: kjAt(3 * time.Second)}
		p.Container, p.Ready, p.ContainersReady = &c, false, false
	})
	dead := jtWorkerTTL + jtHeartbeatGrace + time.Minute
	cases := []struct {
		name     string
		age      time.Duration
		pod      *heartbeat.Pod
		seen     bool
		without  Verdict
		want     Verdict
		wantRule heartbeat.PodRule
	}{
		{"OOM-killed, heartbeat 8 s ago: dead at once", 8 * time.Second, &ended, false, VerdictHealthy, VerdictOwnerDead, heartbeat.PodContainerEnded},
		{"OOM restart, heartbeat 8 s ago: dead at once", 8 * time.Second, func() *heartbeat.Pod { p := kjPod("w", 2*time.Second, 1); return &p }(), false, VerdictHealthy, VerdictOwnerDead, heartbeat.PodRestarted},
		{"alive-not-heartbeating: held", dead, &ready, false, VerdictOwnerDead, VerdictPending, heartbeat.PodAliveNotHeartbeating},
		{"node crash at 40 s: not held", dead, func() *heartbeat.Pod { p := with(ready, func(p *heartbeat.Pod) { p.Ready = false }); return &p }(), false, VerdictOwnerDead, VerdictOwnerDead, heartbeat.PodSeen},
		{"node crash at 300 s: not held", dead, func() *heartbeat.Pod {
			p := with(ready, func(p *heartbeat.Pod) { p.Ready, p.Terminating, p.Disruption = false, true, "DeletionByTaintManager" })
			return &p
		}(), false, VerdictOwnerDead, VerdictOwnerDead, heartbeat.PodSeen},
		{"seen pod gone, late: dead now", 40 * time.Second, nil, true, VerdictPending, VerdictOwnerDead, heartbeat.PodGone},
		{"never seen, late: left alone", 40 * time.Second, nil, false, VerdictPending, VerdictPending, heartbeat.PodNotInView},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, task, _ := kjWorld(tc.age)
			require.Equal(t, tc.without, jtHolding(t, w.judge(jtPolicy()), task.Key, "1@w").Verdict, "without pods")
			pods := []heartbeat.Pod{kjPod("live-0", time.Hour, 0), kjPod("live-1", time.Hour, 0), kjPod("live-2", time.Hour, 0)}
			if tc.pod != nil {
				pods = append(pods, *tc.pod)
			}
			seen := map[string]heartbeat.SeenPod{}
			if tc.seen {
				seen["w"] = heartbeat.SeenPod{UID: "uid-w"}
			}
			w.snap.Pods = heartbeat.NewPodView(pods, seen)
			jd := jtHolding(t, w.judge(jtPolicy()), task.Key, "1@w")
			require.Equal(t, tc.want, jd.Verdict)
			require.Equal(t, tc.wantRule, jd.Evidence().Kubernetes.Rule)
		})
	}
}

// Every plan's owners carry the pod evidence, built once: audit and once
// (All, Findings) and release (OwnerRelease) alike.
func TestJudgeKubernetesOwnersCarryEvidence(t *testing.T) {
	t.Parallel()
	w, _, _ := kjWorld(8 * time.Second)
	w.snap.Pods = heartbeat.NewPodView([]heartbeat.Pod{kjPod("live-0", time.Hour, 0), kjPod("live-1", time.Hour, 0), kjPod("live-2", time.Hour, 0), kjPod("w", 2*time.Second, 1)}, nil)
	for name, plan := range map[string]Plan{
		"all": All(w.snap, jtPolicy()), "findings": Findings(w.snap, jtPolicy()), "release": OwnerRelease(w.snap, jtPolicy(), "1@w"),
	} {
		var found bool
		for _, o := range plan.LockOwners {
			if o.Name != "1@w" {
				continue
			}
			found = true
			require.NotNil(t, o.Kubernetes, name)
			require.Equal(t, heartbeat.PodRestarted, o.Kubernetes.Rule, name)
			require.Equal(t, "dead", o.Liveness, name)
		}
		require.True(t, found, name)
	}
}
