package sim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
)

// podsConfig is testConfig with every process in a pod of its own.
func podsConfig() sim.Config {
	cfg := testConfig()
	cfg.Pods = sim.PodConfig{Enabled: true}
	return cfg
}

func podOf(t *testing.T, f *sim.Fleet, name string) (sim.Pod, bool) {
	t.Helper()
	host := name[strings.Index(name, "@")+1:]
	for _, p := range f.Pods() {
		if p.Name == host {
			return p, true
		}
	}
	return sim.Pod{}, false
}

func processInfo(t *testing.T, f *sim.Fleet, name string) sim.ProcessInfo {
	t.Helper()
	for _, p := range f.Processes() {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no process %s", name)
	return sim.ProcessInfo{}
}

// TestPodsNameProcessesAsKubernetesDoes: workers are 1@<pod>, API processes
// another pid of theirs; each pod has one running container started, at the
// API's one-second resolution, no later than its process's uuid7 row.
func TestPodsNameProcessesAsKubernetesDoes(t *testing.T) {
	t.Parallel()
	f, _ := startFleet(t, podsConfig())
	pods := f.Pods()
	require.Len(t, pods, 4)
	for _, info := range f.Processes() {
		pod, ok := podOf(t, f, info.Name)
		require.True(t, ok, info.Name)
		require.Equal(t, info.Pod, pod.Name)
		require.Equal(t, info.AppType, pod.Component)
		require.Equal(t, info.AppType, pod.Container.Name)
		require.True(t, strings.HasPrefix(pod.Name, sim.DefaultHostname+"-"+info.AppType+"-"), pod.Name)
		if info.AppType == sim.AppTypeWorker {
			require.True(t, strings.HasPrefix(info.Name, "1@"), info.Name)
		} else {
			require.False(t, strings.HasPrefix(info.Name, "1@"), info.Name)
		}
		require.Equal(t, sim.PodPhaseRunning, pod.Phase)
		require.True(t, pod.Container.Running)
		require.Zero(t, pod.Container.Restarts)
		require.Equal(t, pod.Container.StartedAt, pod.Container.StartedAt.Truncate(time.Second))
		require.Equal(t, byte('7'), info.AppStatusID[14], "a uuid7 row id: %s", info.AppStatusID)
		created := uuid7Time(t, info.AppStatusID)
		require.False(t, pod.Container.StartedAt.After(created), "container %v, row %v", pod.Container.StartedAt, created)
	}
}

// uuid7Time reads the milliseconds of a version 7 UUID. It repeats what
// reaper/pulpdb's createdFromID does on purpose: sim plays Pulp and imports
// none of lock-reaper's packages (doc.go), so the simulator's row ids are
// checked independently of the reader they are meant to feed.
func uuid7Time(t *testing.T, id string) time.Time {
	t.Helper()
	var ms int64
	for _, c := range strings.ReplaceAll(id, "-", "")[:12] {
		d := strings.IndexRune("0123456789abcdef", c)
		require.GreaterOrEqual(t, d, 0, id)
		ms = ms<<4 | int64(d)
	}
	return time.UnixMilli(ms)
}

// TestPodsRestartAndDelete: a kill leaves the container terminated with exit
// code 137; a restart runs it again with one restart more, under the same
// owner name and a new row; a deleted pod leaves the list, and its
// replacement is a new pod under a new name.
func TestPodsRestartAndDelete(t *testing.T) {
	t.Parallel()
	f, b := startFleet(t, podsConfig())
	w := f.Workers()[0]
	before, _ := podOf(t, f, w)
	oldRow := processInfo(t, f, w).AppStatusID

	require.NoError(t, f.Kill(w))
	down, ok := podOf(t, f, w)
	require.True(t, ok)
	require.False(t, down.Container.Running)
	require.EqualValues(t, sim.ExitCodeKilled, down.Container.ExitCode)
	require.False(t, down.Container.FinishedAt.Before(before.Container.StartedAt))

	time.Sleep(1100 * time.Millisecond) // a start in a later second than the first
	require.NoError(t, f.Restart(b.ctx, w))
	up, _ := podOf(t, f, w)
	require.True(t, up.Container.Running)
	require.EqualValues(t, 1, up.Container.Restarts)
	require.True(t, up.Container.StartedAt.After(before.Container.StartedAt))
	require.Equal(t, down.Container.FinishedAt, up.Container.FinishedAt, "the last state is the killed incarnation's")
	info := processInfo(t, f, w)
	require.NotEqual(t, oldRow, info.AppStatusID)
	require.Equal(t, 2, info.Incarnation)

	replacement, err := f.DeletePod(b.ctx, w)
	require.NoError(t, err)
	require.NotEqual(t, w, replacement)
	require.True(t, strings.HasPrefix(replacement, "1@"+sim.DefaultHostname+"-worker-"), replacement)
	_, ok = podOf(t, f, w)
	require.False(t, ok, "the deleted pod is gone from the list")
	_, ok = podOf(t, f, replacement)
	require.True(t, ok)
	require.False(t, processInfo(t, f, w).Alive)
	require.ErrorContains(t, f.Restart(b.ctx, w), "deleted")
	_, err = f.DeletePod(b.ctx, w)
	require.Error(t, err)
	require.Len(t, f.Workers(), 4, "the dead process and its replacement")
}

// TestPodsNodeClock: container times follow the node's clock offset and the
// configured resolution.
func TestPodsNodeClock(t *testing.T) {
	t.Parallel()
	cfg := podsConfig()
	cfg.Workers = 1
	cfg.Pods.NodeClockOffset = time.Hour
	cfg.Pods.TimeResolution = time.Minute
	start := time.Now()
	f, _ := startFleet(t, cfg)
	end := time.Now()
	pod, _ := podOf(t, f, f.Workers()[0])
	node := func(t time.Time) time.Time { return t.Add(time.Hour).Truncate(time.Minute).UTC() }
	require.Contains(t, []time.Time{node(start), node(end)}, pod.Container.StartedAt)
}
