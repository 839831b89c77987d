// Package kube reads the pods of Pulp's workers and API processes from the
// Kubernetes API, once per pass, for the heartbeat package's pod evidence.
//
// It links only what that needs: a REST client for the core/v1 group with a
// scheme that knows pods and list options, instead of client-go's full
// clientset and its scheme of every API group.
package kube

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/lock-reaper/lock-reaper/heartbeat"
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
	pods      PodLister
	namespace string
	selector  string
	container string
}

// NewSource returns a Source over pods, after checking the selector.
// container names the worker container; a pod without one but with a single
// container (pulp-operator's API pods) uses that one.
func NewSource(pods PodLister, namespace, selector, container string) (*Source, error) {
	if _, err := labels.Parse(selector); err != nil {
		return nil, fmt.Errorf("kubernetes.selector %q: %w", selector, err)
	}
	if namespace == "" {
		return nil, fmt.Errorf("kubernetes.namespace is empty and the reaper's own namespace is unknown")
	}
	return &Source{pods: pods, namespace: namespace, selector: selector, container: container}, nil
}

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
	out := heartbeat.Pod{Name: p.Name, Phase: string(p.Status.Phase), Terminating: p.DeletionTimestamp != nil}
	if cs := s.workerStatus(p); cs != nil {
		c := &heartbeat.Container{Name: cs.Name, Restarts: cs.RestartCount}
		if r := cs.State.Running; r != nil {
			c.Running, c.StartedAt = true, timePtr(r.StartedAt)
		}
		switch {
		case cs.State.Terminated != nil:
			c.FinishedAt = timePtr(cs.State.Terminated.FinishedAt)
		case cs.LastTerminationState.Terminated != nil:
			c.FinishedAt = timePtr(cs.LastTerminationState.Terminated.FinishedAt)
		}
		out.Container = c
	}
	return out
}

// workerStatus is the status of the worker container: the one named
// s.container, or the only container of a single-container pod.
func (s *Source) workerStatus(p *corev1.Pod) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == s.container {
			return &p.Status.ContainerStatuses[i]
		}
	}
	if len(p.Spec.Containers) == 1 && len(p.Status.ContainerStatuses) == 1 {
		return &p.Status.ContainerStatuses[0]
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
