package kube

import (
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// endedPodMemory is how long the watch keeps a deleted pod whose last
// status reported its containers terminated. The kubelet deletes a
// gracefully deleted pod (grace period 0) right after the status update
// that reported its containers stopped (pkg/kubelet/status/status_manager.go,
// syncPod: canBeDeleted, then Delete), often before the pass woken by that
// report has read the cache: without this memory the pass would find no pod
// and wait for the heartbeat's ttl (pod-gone), though the kubelet said the
// incarnation ended. A few passes' worth is enough: by then the rows are
// past their ttl and the ordinary rules release them.
const endedPodMemory = 5 * time.Minute

// endedPod is a deleted pod's last status, as the kubelet reported it.
type endedPod struct {
	pod     heartbeat.Pod
	deleted time.Time
}

// forget notes the deletion of a pod: one whose last status shows a worker
// or API container terminated (the kubelet's own report) is remembered with
// that status; a pod deleted without that report (a force delete, a pod of
// a partitioned node) is not, for its containers may still run.
func (w *Watcher) forget(obj any, now time.Time) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	ev := w.src.evidence(p)
	if !terminatedNow(ev.Container) && !terminatedNow(ev.API) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.endedPods == nil {
		w.endedPods = map[string]endedPod{}
	}
	w.endedPods[ev.Name] = endedPod{pod: ev, deleted: now}
}

func terminatedNow(c *heartbeat.Container) bool { return c != nil && c.Terminated != nil }

// withEndedPods adds to the cache's pods (sorted by name) the deleted pods
// remembered by forget, unless a pod of the same name is in the cache (a
// successor under the name: its own status is the one that counts), and
// drops the memories older than endedPodMemory.
func (w *Watcher) withEndedPods(pods []heartbeat.Pod, now time.Time) []heartbeat.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.endedPods) == 0 {
		return pods
	}
	present := make(map[string]bool, len(pods))
	for _, p := range pods {
		present[p.Name] = true
	}
	for name, e := range w.endedPods {
		switch {
		case now.Sub(e.deleted) > endedPodMemory, present[name]:
			delete(w.endedPods, name)
		default:
			pods = append(pods, e.pod)
		}
	}
	return pods
}
