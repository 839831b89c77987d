package kubeapi

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodSpec describes a pod to build as pulp-operator's Deployments make them.
type PodSpec struct {
	Namespace, Name string
	// Component is pulp-operator's app.kubernetes.io/component: worker, api.
	Component string
	// Containers are the container names, the first the main one;
	// default the component's.
	Containers []string
	Node       string
	// Started is when the pod's containers started (the node's clock).
	Started time.Time
}

// NewPod is a running, ready pod as a real cluster shows it: pulp-operator's
// labels, a ReplicaSet owner, the node, the five conditions the kubelet
// sets, and a running status per container with ids and images.
func NewPod(s PodSpec) *corev1.Pod {
	if len(s.Containers) == 0 {
		s.Containers = []string{s.Component}
	}
	at := metav1.NewTime(s.Started.Truncate(time.Second))
	grace := int64(DefaultGrace / time.Second)
	hash := "6d9f8b7c5"
	if i := strings.LastIndex(s.Name, "-"); i > 0 {
		if j := strings.LastIndex(s.Name[:i], "-"); j > 0 {
			hash = s.Name[j+1 : i]
		}
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: s.Name, Namespace: s.Namespace, CreationTimestamp: at,
			GenerateName: strings.TrimSuffix(s.Name, s.Name[strings.LastIndex(s.Name, "-")+1:]),
			Labels: map[string]string{
				"app.kubernetes.io/managed-by": "pulp-operator", "app.kubernetes.io/component": s.Component,
				"app.kubernetes.io/part-of": "pulp", "app.kubernetes.io/instance": "pulpcore-" + s.Component + "-example",
				"app.kubernetes.io/name": "pulpcore-" + s.Component, "pulp_cr": "example", "pod-template-hash": hash,
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet",
				Name: "example-" + s.Component + "-" + hash, UID: "11111111-2222-4333-8444-555555555555",
				Controller: ptr(true), BlockOwnerDeletion: ptr(true)}},
		},
		Spec: corev1.PodSpec{
			NodeName: s.Node, RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace,
			ServiceAccountName: "example", DNSPolicy: corev1.DNSClusterFirst, SchedulerName: "default-scheduler",
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: "10.0.0.11", PodIP: "10.244.1.23", StartTime: &at, QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: at},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: at},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: at},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: at},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at},
			},
		},
	}
	for i, c := range s.Containers {
		image := "quay.io/pulp/pulp-minimal:stable"
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: image})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c, Image: image, ImageID: "quay.io/pulp/pulp-minimal@sha256:" + strings.Repeat("ab", 32),
			ContainerID: containerID(s.Name, c, 0, i), Ready: true, Started: ptr(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}},
		})
	}
	return p
}

// containerID is a container runtime id, new for each incarnation.
func containerID(pod, container string, restart int32, i int) string {
	return fmt.Sprintf("containerd://%x%04d%02d", []byte(pod + "/" + container)[:min(len(pod+container), 24)], restart, i)
}

func ptr[T any](v T) *T { return &v }
