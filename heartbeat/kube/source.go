// Package kube reads the pods of Pulp's workers and API processes from the
// Kubernetes API, once per pass, for the heartbeat package's pod evidence,
// and writes the Events that tell what a pass did about them (EventSink).
//
// It links only what that needs: a REST client for the core/v1 group with a
// scheme that knows pods, events and list options, instead of client-go's
// full clientset and its scheme of every API group.
package kube

import (
	"context"
	"fmt"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// PodLister is the one call Source makes: the list of pods in one namespace.
// client-go's typed CoreV1().Pods(namespace) satisfies it, and so does the
// fake clientset's.
type PodLister interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
}

// pageSize bounds one page of the list; a fleet rarely needs a second.
const pageSize = 500

// Source lists the pods of one namespace and label selector. It keeps
// nothing between calls: every pass lists again.
type Source struct {
	pods         PodLister
	namespace    string
	selector     string
	container    string
	apiContainer string
}

// NewSource returns a Source over pods, after checking the selector.
// container names the worker container; a pod without one but with a single
// container uses that one. The API container is DefaultAPIContainer unless
// WithAPIContainer names another.
func NewSource(pods PodLister, namespace, selector, container string) (*Source, error) {
	if _, err := labels.Parse(selector); err != nil {
		return nil, fmt.Errorf("kubernetes.selector %q: %w", selector, err)
	}
	if namespace == "" {
		return nil, fmt.Errorf("kubernetes.namespace is empty and the reaper's own namespace is unknown")
	}
	return &Source{pods: pods, namespace: namespace, selector: selector, container: container, apiContainer: DefaultAPIContainer}, nil
}

// WithAPIContainer names the API container (kubernetes.api_container) and
// returns s; an empty name keeps DefaultAPIContainer.
func (s *Source) WithAPIContainer(name string) *Source {
	if name != "" {
		s.apiContainer = name
	}
	return s
}

// Namespace is the namespace whose pods are listed.
func (s *Source) Namespace() string { return s.namespace }

// Where names the namespace and selector, for reports and logs.
func (s *Source) Where() string {
	return fmt.Sprintf("namespace %s, selector %s", s.namespace, s.selector)
}

// ListPods returns every pod of the namespace and selector, all pages of one
// list, or an error: never a partial list, since the absence of a pod is
// evidence.
func (s *Source) ListPods(ctx context.Context) ([]heartbeat.Pod, error) {
	var out []heartbeat.Pod
	opts := metav1.ListOptions{LabelSelector: s.selector, Limit: pageSize}
	for {
		list, err := s.pods.List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list pods in namespace %s: %w", s.namespace, err)
		}
		for i := range list.Items {
			out = append(out, s.evidence(&list.Items[i]))
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

// evidence reduces a pod to what the rules need.
func (s *Source) evidence(p *corev1.Pod) heartbeat.Pod {
	out := heartbeat.Pod{
		Name: p.Name, UID: string(p.UID), Phase: string(p.Status.Phase), Reason: p.Status.Reason,
		Terminating: p.DeletionTimestamp != nil,
		Ready:       conditionTrue(p, corev1.PodReady), ContainersReady: conditionTrue(p, corev1.ContainersReady),
		Disruption: disruption(p), AnyRunning: anyRunning(p),
	}
	if p.Status.StartTime != nil {
		out.StartTime = timePtr(*p.Status.StartTime)
	}
	worker, api := named(p, s.container), named(p, s.apiContainer)
	if worker == nil && api == nil && len(p.Spec.Containers) == 1 && len(p.Status.ContainerStatuses) == 1 {
		// A single-container pod of another layout: its one container runs
		// whatever Pulp process the pod has.
		worker, api = &p.Status.ContainerStatuses[0], &p.Status.ContainerStatuses[0]
	}
	out.Container, out.API = container(worker), container(api)
	return out
}

// anyRunning says some container status of the pod, init, regular or
// ephemeral, has a running state.
func anyRunning(p *corev1.Pod) bool {
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses} {
		for _, cs := range list {
			if cs.State.Running != nil {
				return true
			}
		}
	}
	return false
}

// conditionTrue says the pod's condition of type t is True.
func conditionTrue(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// disruption is the reason of a DisruptionTarget condition that is True
// ("True" without a reason reads as "DisruptionTarget"), "" without one.
func disruption(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			if c.Reason == "" {
				return string(corev1.DisruptionTarget)
			}
			return c.Reason
		}
	}
	return ""
}

// container reduces a container status; nil for nil.
func container(cs *corev1.ContainerStatus) *heartbeat.Container {
	if cs == nil {
		return nil
	}
	c := &heartbeat.Container{Name: cs.Name, Restarts: cs.RestartCount}
	if r := cs.State.Running; r != nil {
		c.Running, c.StartedAt = true, timePtr(r.StartedAt)
	}
	c.Terminated = termination(cs.State.Terminated)
	c.LastTerminated = termination(cs.LastTerminationState.Terminated)
	switch {
	case c.Terminated != nil:
		c.FinishedAt = c.Terminated.FinishedAt
	case c.LastTerminated != nil:
		c.FinishedAt = c.LastTerminated.FinishedAt
	}
	return c
}

func termination(t *corev1.ContainerStateTerminated) *heartbeat.Termination {
	if t == nil {
		return nil
	}
	return &heartbeat.Termination{Reason: t.Reason, ExitCode: t.ExitCode, FinishedAt: timePtr(t.FinishedAt)}
}

// named is the status of the container named name, nil without one.
func named(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

func timePtr(t metav1.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	v := t.UTC()
	return &v
}
