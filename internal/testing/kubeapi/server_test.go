package kubeapi_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/lock-reaper/lock-reaper/internal/testing/kubeapi"
)

var t0 = time.Date(2026, 7, 24, 11, 0, 0, 0, time.UTC)

const sel = "app.kubernetes.io/managed-by=pulp-operator,app.kubernetes.io/component in (worker,api)"

func newServer(t *testing.T, n int) (*kubeapi.Server, kubernetes.Interface) {
	t.Helper()
	s := kubeapi.New(t)
	for i := range n {
		require.NoError(t, s.Create(kubeapi.NewPod(kubeapi.PodSpec{Namespace: "pulp", Name: fmt.Sprintf("example-worker-6d9f-%05d", i),
			Component: "worker", Node: "node-a", Started: t0})))
	}
	c, err := kubernetes.NewForConfig(s.Config())
	require.NoError(t, err)
	return s, c
}

// TestListPagesAreOneSnapshot: pages with limit and continue serve the
// snapshot of the first page, whatever changes between them; a continue
// token older than the compaction is 410 Gone, Expired.
func TestListPagesAreOneSnapshot(t *testing.T) {
	t.Parallel()
	s, c := newServer(t, 5)
	ctx := context.Background()
	pods := c.CoreV1().Pods("pulp")
	first, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel, Limit: 2})
	require.NoError(t, err)
	require.Len(t, first.Items, 2)
	require.NotEmpty(t, first.Continue)
	require.NoError(t, s.Delete("pulp", "example-worker-6d9f-00004"))
	require.NoError(t, s.Create(kubeapi.NewPod(kubeapi.PodSpec{Namespace: "pulp", Name: "example-worker-6d9f-00009", Component: "worker", Started: t0})))
	names := []string{first.Items[0].Name, first.Items[1].Name}
	next := first.Continue
	for next != "" {
		page, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel, Limit: 2, Continue: next})
		require.NoError(t, err)
		require.Equal(t, first.ResourceVersion, page.ResourceVersion)
		for _, p := range page.Items {
			names = append(names, p.Name)
		}
		next = page.Continue
	}
	require.Equal(t, []string{"example-worker-6d9f-00000", "example-worker-6d9f-00001", "example-worker-6d9f-00002",
		"example-worker-6d9f-00003", "example-worker-6d9f-00004"}, names)

	s.Compact()
	_, err = pods.List(ctx, metav1.ListOptions{LabelSelector: sel, Limit: 2, Continue: first.Continue})
	require.True(t, apierrors.IsResourceExpired(err), "%v", err)

	other, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=content"})
	require.NoError(t, err)
	require.Empty(t, other.Items)
}

// TestWatchEvents: a watch from a list's resourceVersion sees the changes
// after it, as the controllers make them; one from before the compaction is
// answered with an ERROR event, 410 Expired.
func TestWatchEvents(t *testing.T) {
	t.Parallel()
	s, c := newServer(t, 2)
	ctx := context.Background()
	pods := c.CoreV1().Pods("pulp")
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel})
	require.NoError(t, err)
	w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: list.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()
	next := func() (watch.EventType, *corev1.Pod) {
		t.Helper()
		select {
		case e := <-w.ResultChan():
			p, _ := e.Object.(*corev1.Pod)
			return e.Type, p
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event")
			return "", nil
		}
	}
	a, b := "example-worker-6d9f-00000", "example-worker-6d9f-00001"

	require.NoError(t, s.ContainerTerminated("pulp", a, "worker", 137, "OOMKilled", t0.Add(time.Minute)))
	typ, p := next()
	require.Equal(t, watch.Modified, typ)
	require.Equal(t, "OOMKilled", p.Status.ContainerStatuses[0].State.Terminated.Reason)
	require.Equal(t, t0, p.Status.ContainerStatuses[0].State.Terminated.StartedAt.UTC())
	require.NoError(t, s.ContainerRestarted("pulp", a, "worker", t0.Add(70*time.Second)))
	_, p = next()
	cs := p.Status.ContainerStatuses[0]
	require.EqualValues(t, 1, cs.RestartCount)
	require.NotNil(t, cs.LastTerminationState.Terminated)
	require.NotNil(t, cs.State.Running)

	require.NoError(t, s.NodeNotReady("pulp", b, t0.Add(2*time.Minute)))
	_, p = next()
	require.Equal(t, corev1.PodRunning, p.Status.Phase, "a dead node's pod keeps its phase")
	require.NotNil(t, p.Status.ContainerStatuses[0].State.Running, "and its last container status")
	require.NoError(t, s.TaintEvict("pulp", b, t0.Add(7*time.Minute)))
	_, p = next()
	require.Nil(t, p.DeletionTimestamp, "the DisruptionTarget condition comes first")
	require.Equal(t, corev1.ConditionTrue, condition(p, corev1.DisruptionTarget).Status)
	require.Equal(t, kubeapi.ReasonDeletionByTaintManager, condition(p, corev1.DisruptionTarget).Reason)
	_, p = next()
	require.NotNil(t, p.DeletionTimestamp)
	require.NoError(t, s.Delete("pulp", b))
	typ, p = next()
	require.Equal(t, watch.Deleted, typ)
	require.Equal(t, b, p.Name)

	require.NoError(t, s.Relabel("pulp", a, map[string]string{"app.kubernetes.io/component": "debug"}))
	typ, _ = next()
	require.Equal(t, watch.Deleted, typ, "a pod that leaves the selector is deleted to the watch")

	s.Compact()
	old, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: list.ResourceVersion})
	require.NoError(t, err)
	defer old.Stop()
	e := <-old.ResultChan()
	require.Equal(t, watch.Error, e.Type)
	require.True(t, apierrors.IsResourceExpired(apierrors.FromObject(e.Object)), "%v", e.Object)
}

func condition(p *corev1.Pod, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{}
}
