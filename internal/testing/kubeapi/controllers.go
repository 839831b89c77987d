package kubeapi

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What Kubernetes' controllers write, as their source spells it.
const (
	// ReasonDeletionByTaintManager is the DisruptionTarget reason the taint
	// eviction controller sets before it deletes a pod of a NoExecute-tainted
	// (unreachable, not-ready) node (pkg/controller/tainteviction).
	ReasonDeletionByTaintManager = "DeletionByTaintManager"
	// ReasonTerminationByKubelet is the DisruptionTarget reason of a pod the
	// kubelet evicts under node pressure.
	ReasonTerminationByKubelet = "TerminationByKubelet"
	// DefaultGrace is a pod's default terminationGracePeriodSeconds.
	DefaultGrace = 30 * time.Second
)

// setCondition sets a condition's status, reason and message, moving its
// transition time only when the status changes, as the API helpers do.
func setCondition(p *corev1.Pod, t corev1.PodConditionType, status corev1.ConditionStatus, reason, msg string, at time.Time) {
	now := metav1.NewTime(at.Truncate(time.Second))
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message = status, reason, msg
		return
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: status, Reason: reason, Message: msg, LastTransitionTime: now})
}

func containerStatus(p *corev1.Pod, name string) (*corev1.ContainerStatus, error) {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i], nil
		}
	}
	return nil, fmt.Errorf("pod %s has no container %s", p.Name, name)
}

// update is Update with an error from f.
func (s *Server) update(namespace, name string, f func(*corev1.Pod) error) error {
	var ferr error
	err := s.Update(namespace, name, func(p *corev1.Pod) { ferr = f(p) })
	if err != nil {
		return err
	}
	return ferr
}

// updateContainer is update for a change to one container's status.
func (s *Server) updateContainer(namespace, name, container string, f func(*corev1.Pod, *corev1.ContainerStatus)) error {
	return s.update(namespace, name, func(p *corev1.Pod) error {
		cs, err := containerStatus(p, container)
		if err != nil {
			return err
		}
		f(p, cs)
		return nil
	})
}

// ContainerStarted is the kubelet's status update once a pod's container
// first runs: running since at, ready, and the pod Running and Ready.
func (s *Server) ContainerStarted(namespace, name, container string, at time.Time) error {
	return s.updateContainer(namespace, name, container, func(p *corev1.Pod, cs *corev1.ContainerStatus) {
		cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at.Truncate(time.Second))}}
		cs.Ready, cs.Started = true, ptr(true)
		p.Status.Phase = corev1.PodRunning
		setCondition(p, corev1.ContainersReady, corev1.ConditionTrue, "", "", at)
		setCondition(p, corev1.PodReady, corev1.ConditionTrue, "", "", at)
	})
}

// Waiting makes a new pod's container waiting to start (ContainerCreating),
// the pod Pending and not ready, as a pod is before its first start.
func Waiting(p *corev1.Pod) *corev1.Pod {
	p.Status.Phase = corev1.PodPending
	for i := range p.Status.ContainerStatuses {
		cs := &p.Status.ContainerStatuses[i]
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
		cs.Ready, cs.Started = false, ptr(false)
	}
	at := p.CreationTimestamp.Time
	setCondition(p, corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", "", at)
	setCondition(p, corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady", "", at)
	return p
}

// ContainerTerminated is the kubelet's status update after a container's
// process exited (a crash, an OOM kill: exit code 137, reason OOMKilled): its
// state terminated with the incarnation's start and end, not ready, and the
// pod's Ready and ContainersReady False. With restartPolicy Always the pod
// stays Running; the restart comes later (ContainerRestarted).
func (s *Server) ContainerTerminated(namespace, name, container string, exitCode int32, reason string, at time.Time) error {
	return s.updateContainer(namespace, name, container, func(p *corev1.Pod, cs *corev1.ContainerStatus) {
		t := &corev1.ContainerStateTerminated{ExitCode: exitCode, Reason: reason, ContainerID: cs.ContainerID,
			FinishedAt: metav1.NewTime(at.Truncate(time.Second))}
		if r := cs.State.Running; r != nil {
			t.StartedAt = r.StartedAt
		}
		cs.State = corev1.ContainerState{Terminated: t}
		cs.Ready, cs.Started = false, ptr(false)
		msg := "containers with unready status: [" + container + "]"
		setCondition(p, corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", msg, at)
		setCondition(p, corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady", msg, at)
	})
}

// ContainerRestarted is the kubelet's status update once it started the
// container again: the ended incarnation moves to lastState, restartCount
// grows, a new container id runs since at, ready again. A container that
// was still running (an OOM kill and restart between two status updates)
// gets its end at at, exit code 137, OOMKilled.
func (s *Server) ContainerRestarted(namespace, name, container string, at time.Time) error {
	return s.updateContainer(namespace, name, container, func(p *corev1.Pod, cs *corev1.ContainerStatus) {
		ended := cs.State.Terminated
		if ended == nil {
			ended = &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", ContainerID: cs.ContainerID,
				FinishedAt: metav1.NewTime(at.Truncate(time.Second))}
			if r := cs.State.Running; r != nil {
				ended.StartedAt = r.StartedAt
			}
		}
		cs.LastTerminationState = corev1.ContainerState{Terminated: ended}
		cs.RestartCount++
		idx := slices.IndexFunc(p.Status.ContainerStatuses, func(c corev1.ContainerStatus) bool { return c.Name == container })
		cs.ContainerID = containerID(p.Name, container, cs.RestartCount, idx)
		cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at.Truncate(time.Second))}}
		cs.Ready, cs.Started = true, ptr(true)
		setCondition(p, corev1.ContainersReady, corev1.ConditionTrue, "", "", at)
		setCondition(p, corev1.PodReady, corev1.ConditionTrue, "", "", at)
	})
}

// NodeNotReady is the node lifecycle controller's MarkPodsNotReady once the
// node missed node-monitor-grace-period (~40 s): the pod's Ready condition
// False, nothing else. Phase, containers' state and ContainersReady stay as
// the kubelet last wrote them: the kubelet is gone with its node.
func (s *Server) NodeNotReady(namespace, name string, at time.Time) error {
	return s.update(namespace, name, func(p *corev1.Pod) error {
		setCondition(p, corev1.PodReady, corev1.ConditionFalse, "", "", at)
		return nil
	})
}

// TaintEvict is the taint eviction controller after the not-ready or
// unreachable taint's toleration (300 s by default): a DisruptionTarget
// condition, then a graceful delete, so deletionTimestamp at+grace. The pod
// stays, Terminating, until its kubelet comes back or someone force-deletes
// it (Delete).
func (s *Server) TaintEvict(namespace, name string, at time.Time) error {
	if err := s.update(namespace, name, func(p *corev1.Pod) error {
		setCondition(p, corev1.DisruptionTarget, corev1.ConditionTrue, ReasonDeletionByTaintManager,
			"Taint manager: deleting due to NoExecute taint", at)
		return nil
	}); err != nil {
		return err
	}
	return s.GracefulDelete(namespace, name, at)
}

// GracefulDelete is a delete with the pod's grace period (kubectl delete, a
// ReplicaSet scaling down, a rolling update): the API server sets
// deletionTimestamp and deletionGracePeriodSeconds and keeps the pod. The
// kubelet then stops the containers (ContainerTerminated, then
// KubeletFinishDelete).
func (s *Server) GracefulDelete(namespace, name string, at time.Time) error {
	return s.update(namespace, name, func(p *corev1.Pod) error {
		if p.DeletionTimestamp != nil {
			return nil
		}
		grace := int64(DefaultGrace / time.Second)
		if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
			grace = *g
		}
		p.DeletionTimestamp = ptr(metav1.NewTime(at.Add(time.Duration(grace) * time.Second).Truncate(time.Second)))
		p.DeletionGracePeriodSeconds = &grace
		return nil
	})
}

// KubeletFinishDelete is the kubelet's end of a graceful delete once every
// container stopped: the pod's terminal phase in a status update, then the
// delete with grace period 0 (pkg/kubelet/status/status_manager.go,
// syncPod and canBeDeleted). Containers still running are reported
// terminated first (exit code 143 after SIGTERM).
func (s *Server) KubeletFinishDelete(namespace, name string, at time.Time) error {
	if err := s.update(namespace, name, func(p *corev1.Pod) error {
		failed := false
		for i := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[i]
			if r := cs.State.Running; r != nil {
				cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 143, Reason: "Error",
					ContainerID: cs.ContainerID, StartedAt: r.StartedAt, FinishedAt: metav1.NewTime(at.Truncate(time.Second))}}
				cs.Ready, cs.Started = false, ptr(false)
			}
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
				failed = true
			}
		}
		p.Status.Phase = corev1.PodSucceeded
		if failed {
			p.Status.Phase = corev1.PodFailed
		}
		setCondition(p, corev1.PodReady, corev1.ConditionFalse, "PodCompleted", "", at)
		setCondition(p, corev1.ContainersReady, corev1.ConditionFalse, "PodCompleted", "", at)
		return nil
	}); err != nil {
		return err
	}
	return s.Delete(namespace, name)
}

// Evict is the kubelet's eviction under node pressure: the containers
// killed, phase Failed with reason Evicted, a DisruptionTarget condition.
// The pod object stays until PodGC or its owner deletes it.
func (s *Server) Evict(namespace, name string, at time.Time) error {
	return s.update(namespace, name, func(p *corev1.Pod) error {
		for i := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[i]
			if r := cs.State.Running; r != nil {
				cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error",
					ContainerID: cs.ContainerID, StartedAt: r.StartedAt, FinishedAt: metav1.NewTime(at.Truncate(time.Second))}}
			}
			cs.Ready, cs.Started = false, ptr(false)
		}
		p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Evicted"
		p.Status.Message = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 42Mi."
		setCondition(p, corev1.DisruptionTarget, corev1.ConditionTrue, ReasonTerminationByKubelet, "The node was low on resource: memory.", at)
		setCondition(p, corev1.PodReady, corev1.ConditionFalse, "PodFailed", "", at)
		setCondition(p, corev1.ContainersReady, corev1.ConditionFalse, "PodFailed", "", at)
		return nil
	})
}

// Relabel sets a pod's labels, as kubectl label does; a pod that leaves the
// selector is DELETED to a watch of it.
func (s *Server) Relabel(namespace, name string, labels map[string]string) error {
	return s.Update(namespace, name, func(p *corev1.Pod) {
		for k, v := range labels {
			if v == "" {
				delete(p.Labels, k)
			} else {
				p.Labels[k] = v
			}
		}
	})
}
