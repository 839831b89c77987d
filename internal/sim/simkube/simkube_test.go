package simkube_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/heartbeat/kube"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/sim/simkube"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// NewSource's source is what a reaper takes.
var _ reaper.PodSource = (*kube.Source)(nil)

var skT0 = time.Date(2026, 7, 24, 11, 0, 0, 0, time.UTC)

// skPods: a worker running since t0, a worker killed at t0+40s and not yet
// restarted, a worker restarted at t0+50s after a kill at t0+45s, an API pod.
func skPods() []sim.Pod {
	at := func(s int) time.Time { return skT0.Add(time.Duration(s) * time.Second) }
	worker := func(name string, c sim.PodContainer) sim.Pod {
		c.Name = sim.AppTypeWorker
		return sim.Pod{Name: name, Component: sim.AppTypeWorker, Phase: sim.PodPhaseRunning, Created: skT0, Container: c}
	}
	return []sim.Pod{
		worker("w-up", sim.PodContainer{Running: true, StartedAt: at(0)}),
		worker("w-down", sim.PodContainer{StartedAt: at(0), FinishedAt: at(40), ExitCode: sim.ExitCodeKilled}),
		worker("w-again", sim.PodContainer{Running: true, StartedAt: at(50), FinishedAt: at(45), ExitCode: sim.ExitCodeKilled, Restarts: 1}),
		{Name: "api", Component: sim.AppTypeAPI, Phase: sim.PodPhaseRunning, Created: skT0,
			Container: sim.PodContainer{Name: sim.AppTypeAPI, Running: true, StartedAt: at(0)}},
	}
}

// TestSourceReadsThePodsAsTheRulesNeed: through kube.Source, the simulated
// pods give the evidence a cluster's would: the running incarnation's start,
// the end of a killed one, the restart count, the API pod's only container.
func TestSourceReadsThePodsAsTheRulesNeed(t *testing.T) {
	t.Parallel()
	src, err := simkube.NewLister(skPods).Source()
	require.NoError(t, err)
	require.Contains(t, src.Where(), simkube.Namespace)
	pods, err := src.ListPods(context.Background())
	require.NoError(t, err)
	byName := map[string]heartbeat.Pod{}
	for _, p := range pods {
		byName[p.Name] = p
	}
	require.Len(t, byName, 4)

	up := byName["w-up"].Container
	require.True(t, up.Running)
	require.Equal(t, skT0, *up.StartedAt)
	require.Nil(t, up.FinishedAt)

	down := byName["w-down"].Container
	require.False(t, down.Running)
	require.Nil(t, down.StartedAt, "a container that does not run has no running start")
	require.Equal(t, skT0.Add(40*time.Second), *down.FinishedAt)

	again := byName["w-again"].Container
	require.True(t, again.Running)
	require.Equal(t, skT0.Add(50*time.Second), *again.StartedAt)
	require.Equal(t, skT0.Add(45*time.Second), *again.FinishedAt)
	require.EqualValues(t, 1, again.Restarts)

	api := byName["api"]
	require.Equal(t, sim.PodPhaseRunning, api.Phase)
	require.Equal(t, sim.AppTypeAPI, api.API.Name, "the API pod's container is the API container")
	require.Nil(t, api.Container)
	require.True(t, api.CouldRun(), "Ready and ContainersReady while it runs")
	require.NotNil(t, api.StartTime)
	require.NotEmpty(t, api.UID)
}

// TestListerAppliesTheSelectorAndFails: a selector matching no component
// lists nothing; a failing list is the source's error, never a partial list.
func TestListerAppliesTheSelectorAndFails(t *testing.T) {
	t.Parallel()
	l := simkube.NewLister(skPods)
	list, err := l.List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=content"})
	require.NoError(t, err)
	require.Empty(t, list.Items)
	list, err = l.List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=api"})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)

	src, err := l.Source()
	require.NoError(t, err)
	l.Fail(errors.New(`pods is forbidden: User "system:serviceaccount:pulp:lock-reaper" cannot list resource "pods"`))
	pods, err := src.ListPods(context.Background())
	require.ErrorContains(t, err, "forbidden")
	require.Nil(t, pods)
	l.Fail(nil)
	pods, err = src.ListPods(context.Background())
	require.NoError(t, err)
	require.Len(t, pods, 4)
}
