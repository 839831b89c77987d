package kubeapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestEventsRecorded: Events created through core/v1 and events.k8s.io/v1
// are recorded as sent; a namespace that does not match, or a name used
// twice, is refused as the API server refuses it; FailEvents refuses every
// Event write while the pods are still listed.
func TestEventsRecorded(t *testing.T) {
	t.Parallel()
	s, c := newServer(t, 1)
	ctx := context.Background()
	pod := corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "pulp", Name: "example-worker-6d9f-00000", UID: "u-1"}
	core := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "example-worker-6d9f-00000.1", Namespace: "pulp"}, InvolvedObject: pod,
		Type: corev1.EventTypeNormal, Reason: "LocksReleased", Action: "Release", Message: "released 3 locks", Count: 1,
		ReportingController: "lock-reaper", ReportingInstance: "reaper-0"}
	_, err := c.CoreV1().Events("pulp").Create(ctx, core, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.CoreV1().Events("pulp").Create(ctx, core, metav1.CreateOptions{})
	require.True(t, apierrors.IsAlreadyExists(err), "%v", err)
	other := core.DeepCopy()
	other.Name, other.InvolvedObject.Namespace = "x.2", "elsewhere"
	_, err = c.CoreV1().Events("pulp").Create(ctx, other, metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "%v", err)

	_, err = c.EventsV1().Events("pulp").Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: "example-worker-6d9f-00000."},
		Regarding: pod, Type: corev1.EventTypeWarning, Reason: "MassDeathHold", Action: "Hold", Note: "held back",
		ReportingController: "lock-reaper", ReportingInstance: "reaper-0", EventTime: metav1.NowMicro()}, metav1.CreateOptions{})
	require.NoError(t, err)

	got := s.Events()
	require.Len(t, got, 2)
	require.Equal(t, "v1", got[0].API)
	require.Equal(t, pod, got[0].Regarding)
	require.Equal(t, []string{"LocksReleased", "released 3 locks", "lock-reaper", "reaper-0"},
		[]string{got[0].Reason, got[0].Note, got[0].ReportingController, got[0].ReportingInstance})
	require.Equal(t, "events.k8s.io/v1", got[1].API)
	require.Equal(t, []string{"MassDeathHold", "held back", "pulp"}, []string{got[1].Reason, got[1].Note, got[1].Namespace})
	require.NotEmpty(t, got[1].Name, "generateName is honoured")

	s.FailEvents(http.StatusForbidden)
	core.Name = "example-worker-6d9f-00000.3"
	_, err = c.CoreV1().Events("pulp").Create(ctx, core, metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	require.Contains(t, err.Error(), `cannot create resource "events"`)
	_, err = c.CoreV1().Pods("pulp").List(ctx, metav1.ListOptions{LabelSelector: sel})
	require.NoError(t, err, "lists still answer")
	require.Len(t, s.Events(), 2)
}
