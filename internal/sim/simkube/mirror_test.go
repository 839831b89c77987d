package simkube_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/sim/simkube"
	"github.com/lock-reaper/lock-reaper/internal/testing/kubeapi"
)

// TestMirrorWritesAsTheKubelet: the fleet's pod changes reach the API
// server as the kubelet reports them: a kill as the state terminated, a
// restart as lastState with restartCount grown, a deleted pod's container
// stopped before the object goes; a frozen pod (its node crashed) keeps its
// last status.
func TestMirrorWritesAsTheKubelet(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	pods := skPods()[:1]
	frozen := skPods()[0]
	frozen.Name = "w-frozen"
	pods = append(pods, frozen)
	list := func() []sim.Pod {
		mu.Lock()
		defer mu.Unlock()
		return append([]sim.Pod(nil), pods...)
	}
	set := func(i int, f func(*sim.Pod)) {
		mu.Lock()
		f(&pods[i])
		mu.Unlock()
	}
	api := kubeapi.New(t)
	m := simkube.NewMirror(api, list)
	require.NoError(t, m.Sync())
	require.NotNil(t, api.Pod(simkube.Namespace, "w-up").Status.ContainerStatuses[0].State.Running)
	m.Freeze("w-frozen")

	killed := skT0.Add(time.Minute)
	for i := range pods {
		set(i, func(p *sim.Pod) {
			p.Container.Running, p.Container.FinishedAt, p.Container.ExitCode = false, killed, sim.ExitCodeKilled
		})
	}
	require.NoError(t, m.Sync())
	cs := api.Pod(simkube.Namespace, "w-up").Status.ContainerStatuses[0]
	require.Equal(t, killed, cs.State.Terminated.FinishedAt.UTC())
	require.Len(t, m.Ends("w-up"), 1)
	require.NotNil(t, api.Pod(simkube.Namespace, "w-frozen").Status.ContainerStatuses[0].State.Running, "no kubelet, no report")
	require.Empty(t, m.Ends("w-frozen"))

	set(0, func(p *sim.Pod) {
		p.Container.Running, p.Container.StartedAt, p.Container.Restarts = true, killed.Add(time.Second), 1
	})
	require.NoError(t, m.Sync())
	cs = api.Pod(simkube.Namespace, "w-up").Status.ContainerStatuses[0]
	require.EqualValues(t, 1, cs.RestartCount)
	require.Equal(t, killed, cs.LastTerminationState.Terminated.FinishedAt.UTC())
	require.NotNil(t, cs.State.Running)

	mu.Lock()
	pods = pods[1:]
	mu.Unlock()
	require.NoError(t, m.Sync())
	require.Nil(t, api.Pod(simkube.Namespace, "w-up"), "deleted after its container stopped")
	require.Len(t, m.Ends("w-up"), 2)
	mu.Lock()
	pods = nil
	mu.Unlock()
	require.NoError(t, m.Sync())
	require.NotNil(t, api.Pod(simkube.Namespace, "w-frozen"), "a crashed node's pod stays")
}
