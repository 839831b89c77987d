// Package simkube shows a simulated fleet's pods (sim.Fleet.Pods, with
// sim.Config.Pods) to lock-reaper as the Kubernetes API server would: core/v1
// pods labelled as pulp-operator labels them, listed by label selector, and
// read through lock-reaper's own kube.Source, so that a test's or a
// benchmark's pod evidence takes the path a cluster's does from the pod list
// on. NewSource's *kube.Source is a reaper.PodSource.
//
// It is a package apart because package sim plays Pulp and imports nothing
// of lock-reaper's.
package simkube

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lock-reaper/lock-reaper/heartbeat/kube"
	"github.com/lock-reaper/lock-reaper/internal/sim"
)

// Namespace is the namespace the simulated pods live in.
const Namespace = "pulp"

// Lister answers kube.Source's pods list from the simulated pods.
type Lister struct {
	pods func() []sim.Pod

	mu   sync.Mutex
	fail error
}

// NewLister lists the pods pods returns, such as a fleet's Pods.
func NewLister(pods func() []sim.Pod) *Lister { return &Lister{pods: pods} }

// NewSource is lock-reaper's pod source over the fleet's pods, with the
// default selector and worker container name.
func NewSource(f *sim.Fleet) (*kube.Source, error) {
	return NewLister(f.Pods).Source()
}

// Source is lock-reaper's pod source over the lister, with the default
// selector and worker container name.
func (l *Lister) Source() (*kube.Source, error) {
	return kube.NewSource(l, Namespace, kube.DefaultSelector, kube.DefaultContainer)
}

// Fail makes every list fail with err, as a refused or timed-out list does;
// nil lists again.
func (l *Lister) Fail(err error) {
	l.mu.Lock()
	l.fail = err
	l.mu.Unlock()
}

// List returns, in one page, the pods that match the options' label selector.
func (l *Lister) List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	l.mu.Lock()
	fail := l.fail
	l.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("label selector %q: %w", opts.LabelSelector, err)
	}
	out := &corev1.PodList{}
	for _, p := range l.pods() {
		obj := Object(p)
		if sel.Matches(labels.Set(obj.Labels)) {
			out.Items = append(out.Items, obj)
		}
	}
	return out, nil
}

// Object is the pod as the API server returns it: pulp-operator's labels,
// one container, and its state. Times are the simulated node's, already at
// the API's resolution.
func Object(p sim.Pod) corev1.Pod {
	c := p.Container
	created := metav1.NewTime(p.Created)
	status := corev1.ContainerStatus{Name: c.Name, RestartCount: c.Restarts, Ready: c.Running, Started: &c.Running}
	ended := &corev1.ContainerStateTerminated{ExitCode: c.ExitCode, Reason: "Error", FinishedAt: metav1.NewTime(c.FinishedAt)}
	switch {
	case c.Running:
		status.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(c.StartedAt)}
		if !c.FinishedAt.IsZero() {
			status.LastTerminationState.Terminated = ended
		}
	default:
		ended.StartedAt = metav1.NewTime(c.StartedAt)
		status.State.Terminated = ended
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: Namespace, CreationTimestamp: created, UID: types.UID("uid-" + p.Name + "-" + strconv.FormatInt(p.Created.UnixNano(), 36)),
			Labels: map[string]string{
				"app.kubernetes.io/managed-by": "pulp-operator",
				"app.kubernetes.io/component":  p.Component,
				"app.kubernetes.io/part-of":    "pulp",
				"pulp_cr":                      "pulp",
			},
		},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: c.Name}}},
		Status: corev1.PodStatus{Phase: corev1.PodPhase(p.Phase), StartTime: &created, Conditions: conditions(p), ContainerStatuses: []corev1.ContainerStatus{status}},
	}
}

// conditions are the pod's Ready and ContainersReady as the kubelet reports
// them: True while the pod runs its running container.
func conditions(p sim.Pod) []corev1.PodCondition {
	ready := corev1.ConditionFalse
	if p.Phase == string(corev1.PodRunning) && p.Container.Running {
		ready = corev1.ConditionTrue
	}
	return []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}, {Type: corev1.ContainersReady, Status: ready}}
}
