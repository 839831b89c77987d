package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper"
)

func TestPodText(t *testing.T) {
	t.Parallel()
	require.Empty(t, podText(nil))
	started := time.Date(2026, 7, 24, 11, 0, 0, 0, time.UTC)
	e := &heartbeat.PodEvidence{Rule: heartbeat.PodAliveNotHeartbeating, Pod: heartbeat.Pod{
		Name: "example-worker-1", Phase: "Running", Container: &heartbeat.Container{Name: "worker", Running: true, StartedAt: &started, Restarts: 2},
	}}
	require.Equal(t, " [pod example-worker-1 Running, started 2026-07-24T11:00:00Z, 2 restarts: alive-not-heartbeating]", podText(reaper.PodEvidenceOf(e)))
	require.Equal(t, " [pod gone-1: pod-gone]", podText(reaper.PodEvidenceOf(&heartbeat.PodEvidence{Rule: heartbeat.PodGone, Pod: heartbeat.Pod{Name: "gone-1"}})))
}

func TestWriteKubernetes(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	writeKubernetes(&b, nil)
	require.Empty(t, b.String())
	writeKubernetes(&b, &reaper.KubernetesReport{Read: reaper.KubernetesUnavailable, Where: "namespace pulp, selector app=x", Error: "forbidden"})
	require.Contains(t, b.String(), "Kubernetes: unavailable (namespace pulp, selector app=x): judged by heartbeats alone: forbidden")
	b.Reset()
	writeKubernetes(&b, &reaper.KubernetesReport{Read: reaper.KubernetesRead, Where: "namespace pulp", Pods: 4,
		OwnersByEvidence: map[heartbeat.PodRule]int{heartbeat.PodAliveNotHeartbeating: 1}})
	require.Equal(t, "\nKubernetes: 4 pods read (namespace pulp); 1 workers alive by Kubernetes but not heartbeating\n", b.String())
}
