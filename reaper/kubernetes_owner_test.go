package reaper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// kpStatusUnknown is p after the kubelet's TerminatePod at the end of an
// eviction: phase Failed reason Evicted, DisruptionTarget
// TerminationByKubelet, its worker container terminated
// ContainerStatusUnknown with no time at all (status_manager.go).
func kpStatusUnknown(p *corev1.Pod) *corev1.Pod {
	kpEvicted(p, time.Now())
	p.Status.ContainerStatuses[0].State.Terminated = &corev1.ContainerStateTerminated{Reason: "ContainerStatusUnknown", ExitCode: 137,
		Message: "The container could not be located when the pod was terminated"}
	return p
}

// A pod the kubelet failed whose container status has no finish time: the
// rows of its incarnation are dead at once (pod-terminal).
func TestKubernetesPassTerminalPhaseFreedAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pods := f.kpFleet()
	row := f.kpWorker("1@w", 8*time.Second, time.Hour)
	taskID, res := f.kpRunningTask("1@w", row)
	cluster := newKPCluster(t, append(pods, kpStatusUnknown(kpPod("w", time.Now().Add(-time.Hour-time.Minute), 0)))...)

	rep := f.kpPass(cluster, reaper.ModeOnce)
	fd := f.kpReleased(rep, "1@w", taskID, res)
	require.Equal(t, heartbeat.PodTerminal, fd.Evidence().Kubernetes.Rule)
	require.Equal(t, "Evicted", fd.Evidence().Kubernetes.Reason)
}

// PodGC fails the pods of a node object that is gone without the kubelet,
// leaving the containers' last reported states (running): no death; the
// heartbeat rules apply.
func TestKubernetesPassPodGCFailedKept(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pods := f.kpFleet()
	row := f.kpWorker("1@w", 8*time.Second, time.Hour)
	taskID, res := f.kpRunningTask("1@w", row)
	p := kpPod("w", time.Now().Add(-time.Hour-time.Minute), 0)
	kpCondition(p, corev1.DisruptionTarget, corev1.ConditionTrue, "DeletionByPodGC")
	p.Status.Phase = corev1.PodFailed
	cluster := newKPCluster(t, append(pods, p)...)

	rep := f.kpPass(cluster, reaper.ModeOnce)
	f.kpKept(rep, "1@w", taskID, res)
}

// A hostNetwork worker names its node, not its pod; alive, it is outside
// the view, and the other owners keep their pod evidence: a restarted
// worker's locks are freed at once.
func TestKubernetesPassHostNetworkOwnerTrustPerOwner(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pods := f.kpFleet()
	f.kpWorker("1@node-a", time.Second, time.Hour)
	row := f.kpWorker("1@w", 8*time.Second, time.Hour)
	taskID, res := f.kpRunningTask("1@w", row)
	now := time.Now()
	cluster := newKPCluster(t, append(pods, kpOOMRestarted(kpPod("w", now.Add(-time.Hour-time.Minute), 0), now.Add(-3*time.Second), now.Add(-2*time.Second)))...)

	rep := f.kpPass(cluster, reaper.ModeOnce)
	fd := f.kpReleased(rep, "1@w", taskID, res)
	require.Equal(t, heartbeat.PodRestarted, fd.Evidence().Kubernetes.Rule)
	require.Equal(t, 1, rep.Kubernetes.OwnersByEvidence[heartbeat.PodOutsideView], "the hostNetwork worker")
}
