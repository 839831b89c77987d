package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/lock-reaper/lock-reaper/internal/testing/kubeapi"
)

// TestEventSinkWritesCoreEvents: an Event reaches the API server as a
// core/v1 Event about the pod, in its namespace, with its uid (what
// `kubectl describe pod` matches), lock-reaper as the reporting controller
// and the instance; a second Event of the same pod gets a name of its own;
// a refused write is the caller's error.
func TestEventSinkWritesCoreEvents(t *testing.T) {
	t.Parallel()
	api := kubeapi.New(t)
	kc := writeKubeconfig(t, api.URL())
	d, err := Open(context.Background(), Config{Enabled: EnabledTrue, Kubeconfig: kc})
	require.NoError(t, err)
	sink, err := d.EventSink("lock-reaper-7c9f-abcde")
	require.NoError(t, err)
	require.NotNil(t, sink)
	pod := PodRef{Namespace: "pulp", Name: "example-worker-1", UID: "u-1"}
	e := Event{Regarding: pod, Type: corev1.EventTypeNormal, Reason: "LocksReleased", Action: "Release", Note: "released 3 locks"}
	require.NoError(t, sink.Create(context.Background(), e))
	e.Note = strings.Repeat("é", 700)
	require.NoError(t, sink.Create(context.Background(), e), "a second Event of the pod, with a long note")

	got := api.Events()
	require.Len(t, got, 2)
	require.Equal(t, "v1", got[0].API)
	require.Equal(t, "pulp", got[0].Namespace)
	require.Equal(t, corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "pulp", Name: "example-worker-1", UID: "u-1"}, got[0].Regarding)
	require.Equal(t, []string{"Normal", "LocksReleased", "Release", "released 3 locks", "lock-reaper", "lock-reaper-7c9f-abcde"},
		[]string{got[0].Type, got[0].Reason, got[0].Action, got[0].Note, got[0].ReportingController, got[0].ReportingInstance})
	require.EqualValues(t, 1, got[0].Count)
	require.NotEqual(t, got[0].Name, got[1].Name)
	require.True(t, strings.HasPrefix(got[0].Name, "example-worker-1."), got[0].Name)
	require.LessOrEqual(t, len(got[1].Note), maxNote)
	require.True(t, strings.HasSuffix(got[1].Note, "é..."), "cut on a character: %q", got[1].Note[len(got[1].Note)-8:])

	api.FailEvents(403)
	err = sink.Create(context.Background(), e)
	require.True(t, apierrors.IsForbidden(err), "%v", err)

	api.FailEvents(0)
	api.Hang(true)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	require.Error(t, sink.Create(ctx, e))
	require.Less(t, time.Since(start), 5*time.Second, "a write is bounded by its context")
}

// TestEventSinkOffWithoutSource: no pods read, no Events written.
func TestEventSinkOffWithoutSource(t *testing.T) {
	t.Parallel()
	sink, err := Decision{}.EventSink("x")
	require.NoError(t, err)
	require.Nil(t, sink)
}
