package kube

import (
	corev1 "k8s.io/api/core/v1"
)

// incarnationEnded says whether the change of a pod from old to new is the
// kubelet reporting that an incarnation of the worker container ended: its
// state turned terminated (a crash, an OOM kill, a deleted pod's containers
// stopping), or its restartCount grew with a lastState terminated (it ended
// and was restarted between two status updates), or the pod reached a
// terminal phase (every container ended: an eviction). old is nil for a pod
// first seen.
//
// The deletion of a pod object is not among them: the kubelet deletes a
// gracefully deleted pod with grace period 0 once its containers stopped
// (pkg/kubelet/status/status_manager.go, syncPod: canBeDeleted, then Delete
// with GracePeriodSeconds 0 and the pod's UID as precondition), after the
// status update that reported them terminated, which is the trigger. A
// delete that comes without that report (a force delete, a pod of a
// partitioned node) says nothing of the containers, which may still run.
//
// The worker container is the one named container, or the only one of a
// single-container pod, as Source reads it.
func incarnationEnded(old, new *corev1.Pod, container string) bool {
	if new == nil {
		return false
	}
	cur := workerContainer(new, container)
	if cur == nil {
		return terminal(new) && (old == nil || !terminal(old))
	}
	var prev *corev1.ContainerStatus
	if old != nil {
		prev = workerContainer(old, container)
	}
	if t := cur.State.Terminated; t != nil {
		if prev == nil || prev.State.Terminated == nil {
			return true
		}
		// Another incarnation's end, seen after a restart the cache missed.
		if !sameEnd(prev.State.Terminated, t) {
			return true
		}
	}
	if last := cur.LastTerminationState.Terminated; prev != nil && last != nil && cur.RestartCount > prev.RestartCount {
		// A restart after an end already reported (prev's terminated state
		// is the new lastState) is no new end; more than one restart
		// between two reports, or one not reported, is.
		reported := prev.State.Terminated != nil && sameEnd(prev.State.Terminated, last)
		if !reported || cur.RestartCount > prev.RestartCount+1 {
			return true
		}
	}
	return terminal(new) && old != nil && !terminal(old)
}

// workerContainer is the status of the container named name, or of the only
// container of a single-container pod; nil when there is none.
func workerContainer(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	if len(p.Spec.Containers) == 1 && len(p.Status.ContainerStatuses) == 1 {
		return &p.Status.ContainerStatuses[0]
	}
	return nil
}

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

// sameEnd says two terminated states are one incarnation's end.
func sameEnd(a, b *corev1.ContainerStateTerminated) bool {
	return a.ContainerID == b.ContainerID && a.FinishedAt.Equal(&b.FinishedAt)
}
