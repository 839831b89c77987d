package kube

import (
	"context"
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// spReady gives p the conditions the kubelet reports of a running, ready pod.
func spReady(p *corev1.Pod) {
	p.UID = types.UID("uid-" + p.Name)
	start := metav1.NewTime(stStart.Add(-time.Minute))
	p.Status.StartTime = &start
	for _, t := range []corev1.PodConditionType{corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue})
	}
}

func spSet(p *corev1.Pod, t corev1.PodConditionType, s corev1.ConditionStatus, reason string) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			p.Status.Conditions[i].Status, p.Status.Conditions[i].Reason = s, reason
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: s, Reason: reason})
}

// The pod objects Kubernetes' own controllers and the kubelet leave, read
// into the facts the rules weigh.
func TestPodEvidenceOfRealisticPods(t *testing.T) {
	t.Parallel()
	ended := metav1.NewTime(stStart.Add(time.Hour))
	// Node crash at 40 s: the node lifecycle controller's MarkPodsNotReady
	// turns Ready False and nothing else; phase and container status stay.
	lost := stPod("example-worker-lost", "worker", stStart, 0)
	spReady(&lost)
	spSet(&lost, corev1.PodReady, corev1.ConditionFalse, "")
	// At 300 s the taint manager adds DisruptionTarget and deletes the pod.
	evicted := stPod("example-worker-tainted", "worker", stStart, 0)
	spReady(&evicted)
	spSet(&evicted, corev1.PodReady, corev1.ConditionFalse, "")
	spSet(&evicted, corev1.DisruptionTarget, corev1.ConditionTrue, "DeletionByTaintManager")
	evicted.DeletionTimestamp = &ended
	// The kubelet's eviction manager: phase Failed, reason Evicted, every
	// container terminated.
	pressure := stPod("example-worker-evicted", "worker", stStart, 0)
	spReady(&pressure)
	spSet(&pressure, corev1.PodReady, corev1.ConditionFalse, "PodFailed")
	spSet(&pressure, corev1.ContainersReady, corev1.ConditionFalse, "PodFailed")
	spSet(&pressure, corev1.DisruptionTarget, corev1.ConditionTrue, "TerminationByKubelet")
	pressure.Status.Phase, pressure.Status.Reason = corev1.PodFailed, "Evicted"
	pressure.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 137, StartedAt: metav1.NewTime(stStart), FinishedAt: ended}}
	// An OOM kill the kubelet restarted.
	oom := stPod("example-worker-oom", "worker", stStart.Add(2*time.Hour), 1)
	spReady(&oom)
	oom.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, FinishedAt: ended}}
	// An API pod with pulp-operator's telemetry sidecar.
	api := stPod("example-api-otel", "api", stStart, 0)
	spReady(&api)
	api.Spec.Containers = append(api.Spec.Containers, corev1.Container{Name: "otel-collector-sidecar"})
	api.Status.ContainerStatuses = append(api.Status.ContainerStatuses, corev1.ContainerStatus{Name: "otel-collector-sidecar",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(stStart)}}})

	byName := listPodsByName(t, &lost, &evicted, &pressure, &oom, &api)
	got := byName["example-worker-lost"]
	require.Equal(t, "uid-example-worker-lost", got.UID)
	require.Equal(t, stStart.Add(-time.Minute), *got.StartTime)
	require.False(t, got.Ready)
	require.True(t, got.ContainersReady, "MarkPodsNotReady changes Ready only")
	require.True(t, got.Container.Running)
	require.False(t, got.CouldRun())
	require.False(t, IncarnationEnded(got))

	got = byName["example-worker-tainted"]
	require.Equal(t, "DeletionByTaintManager", got.Disruption)
	require.True(t, got.Terminating)
	require.False(t, got.CouldRun())
	require.False(t, IncarnationEnded(got), "a deletion is no report of an end")

	got = byName["example-worker-evicted"]
	require.Equal(t, "Failed", got.Phase)
	require.Equal(t, "Evicted", got.Reason)
	require.Equal(t, &heartbeat.Termination{Reason: "Error", ExitCode: 137, FinishedAt: &ended.Time}, got.Container.Terminated)
	require.True(t, IncarnationEnded(got))

	got = byName["example-worker-oom"]
	require.True(t, got.CouldRun())
	require.Equal(t, &heartbeat.Termination{Reason: "OOMKilled", ExitCode: 137, FinishedAt: &ended.Time}, got.Container.LastTerminated)
	require.Equal(t, int32(1), got.Container.Restarts)
	require.True(t, IncarnationEnded(got))

	got = byName["example-api-otel"]
	require.Nil(t, got.Container)
	require.Equal(t, "api", got.API.Name, "the API container, not the sidecar")
	require.True(t, got.CouldRun())
}

func TestPodEvidenceAPIContainerNamed(t *testing.T) {
	t.Parallel()
	p := stPod("example-api-1", "api", stStart, 0)
	p.Status.ContainerStatuses[0].Name, p.Spec.Containers[0].Name = "pulp-api", "pulp-api"
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "otel-collector-sidecar"})
	p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: "otel-collector-sidecar"})
	src, err := NewSource(fake.NewClientset(&p).CoreV1().Pods("pulp"), "pulp", DefaultSelector, DefaultContainer)
	require.NoError(t, err)
	pods, err := src.WithAPIContainer("pulp-api").ListPods(context.Background())
	require.NoError(t, err)
	require.Equal(t, "pulp-api", pods[0].API.Name)
}
