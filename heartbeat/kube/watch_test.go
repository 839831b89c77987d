package kube

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/testing/kubeapi"
)

var wt0 = time.Date(2026, 7, 24, 11, 0, 0, 0, time.UTC)

// watchSetup is a stand-in API server with a worker pod and an API pod, and
// a Watcher over it, running until the test ends.
func watchSetup(t *testing.T, cfg WatchConfig, bookmarks time.Duration) (*kubeapi.Server, *Watcher) {
	t.Helper()
	api := kubeapi.New(t)
	if bookmarks > 0 {
		api.SetBookmarkInterval(bookmarks)
	}
	for _, p := range []*kubeapiPod{
		{"example-worker-6d9f-aaaaa", "worker"}, {"example-worker-6d9f-bbbbb", "worker"}, {"example-api-7c4b-ccccc", "api"},
	} {
		require.NoError(t, api.Create(kubeapi.NewPod(kubeapi.PodSpec{Namespace: "pulp", Name: p.name, Component: p.component, Node: "node-a", Started: wt0})))
	}
	src, err := NewRESTSource(api.Config(), "pulp", DefaultSelector, DefaultContainer)
	require.NoError(t, err)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	w, err := NewWatcher(src, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	require.Eventually(t, w.FromCache, 10*time.Second, 10*time.Millisecond, "the watch syncs")
	return api, w
}

type kubeapiPod struct{ name, component string }

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

// ended waits up to d for the watcher to signal an end.
func ended(w *Watcher, d time.Duration) bool {
	select {
	case <-w.Ended():
		return true
	case <-time.After(d):
		return false
	}
}

// TestWatcherSignalsContainerEnds: the kubelet's report that a worker
// container ended signals within a second or two, whether it shows the
// state terminated or, after a restart it missed, lastState with a grown
// restartCount; an eviction too. A node's loss of Ready, the taint
// manager's DisruptionTarget and graceful delete, and a force delete do
// not: none of them says the container stopped.
func TestWatcherSignalsContainerEnds(t *testing.T) {
	t.Parallel()
	api, w := watchSetup(t, WatchConfig{}, 0)
	a, b := "example-worker-6d9f-aaaaa", "example-worker-6d9f-bbbbb"

	require.NoError(t, api.NodeNotReady("pulp", b, wt0.Add(40*time.Second)))
	require.NoError(t, api.TaintEvict("pulp", b, wt0.Add(300*time.Second)))
	require.NoError(t, api.Delete("pulp", b))
	require.False(t, ended(w, 500*time.Millisecond), "node loss, taint eviction and force delete prove no container's end")

	start := time.Now()
	require.NoError(t, api.ContainerTerminated("pulp", a, "worker", 137, "OOMKilled", wt0.Add(time.Minute)))
	require.True(t, ended(w, 2*time.Second))
	t.Logf("signalled %v after the kubelet's report", time.Since(start))
	pods, err := w.ListPods(context.Background())
	require.NoError(t, err)
	require.Len(t, pods, 2, "b is gone from the cache")
	require.NotNil(t, pods[1].Container.FinishedAt, "the cache has the terminated state")

	require.NoError(t, api.ContainerRestarted("pulp", a, "worker", wt0.Add(70*time.Second)))
	require.False(t, ended(w, 300*time.Millisecond), "a restart after a reported end is no new end")
	// Killed and restarted between two status updates: only lastState and
	// restartCount tell.
	require.NoError(t, api.ContainerRestarted("pulp", a, "worker", wt0.Add(90*time.Second)))
	require.True(t, ended(w, 2*time.Second))

	require.NoError(t, api.Evict("pulp", a, wt0.Add(2*time.Minute)))
	require.True(t, ended(w, 2*time.Second), "an evicted pod's containers ended")
	require.EqualValues(t, 3, w.Endings())
}

// TestWatcherGracefulDelete: a graceful delete signals when the kubelet
// reports the containers stopped, not when deletionTimestamp is set, and
// the kubelet's final delete adds nothing.
func TestWatcherGracefulDelete(t *testing.T) {
	t.Parallel()
	api, w := watchSetup(t, WatchConfig{}, 0)
	a := "example-worker-6d9f-aaaaa"
	require.NoError(t, api.GracefulDelete("pulp", a, wt0.Add(time.Minute)))
	require.False(t, ended(w, 300*time.Millisecond))
	require.NoError(t, api.KubeletFinishDelete("pulp", a, wt0.Add(time.Minute+2*time.Second)))
	require.True(t, ended(w, 2*time.Second))
	require.False(t, ended(w, 300*time.Millisecond))
	require.EqualValues(t, 1, w.Endings())
}

// TestWatcherRelistsAfterGone: a watch the server can no longer resume
// (its resourceVersion compacted away) is answered 410 Gone; the informer
// lists again, and a container end it missed meanwhile still signals.
func TestWatcherRelistsAfterGone(t *testing.T) {
	t.Parallel()
	api, w := watchSetup(t, WatchConfig{}, 0)
	// A watch that ends after a second resumes from its resourceVersion;
	// client-go's reflector lists again after a shorter one.
	time.Sleep(1200 * time.Millisecond)
	api.Mute(true)
	require.NoError(t, api.ContainerTerminated("pulp", "example-worker-6d9f-aaaaa", "worker", 1, "Error", wt0.Add(time.Minute)))
	api.Compact()
	api.CloseWatches()
	api.Mute(false)
	require.True(t, ended(w, 5*time.Second), "the end missed by the watch is seen after the list")
	require.Positive(t, api.Expired(), "the watch was answered 410 Gone")
	require.Eventually(t, w.FromCache, 10*time.Second, 10*time.Millisecond)
	pods, err := w.ListPods(context.Background())
	require.NoError(t, err)
	require.NotNil(t, pods[1].Container.FinishedAt)
}

// TestWatcherFallsBackToList: while the watch is silent for longer than the
// bookmarks allow, or failing, passes list instead of trusting the cache.
func TestWatcherFallsBackToList(t *testing.T) {
	t.Parallel()
	api, w := watchSetup(t, WatchConfig{MaxSilence: 700 * time.Millisecond}, 100*time.Millisecond)
	time.Sleep(time.Second)
	require.True(t, w.FromCache(), "bookmarks keep a quiet watch trusted")

	api.Mute(true)
	require.Eventually(t, func() bool { return !w.FromCache() }, 5*time.Second, 10*time.Millisecond, "a silent watch is not trusted")
	lists := api.Lists()
	pods, err := w.ListPods(context.Background())
	require.NoError(t, err)
	require.Len(t, pods, 3)
	require.Equal(t, lists+1, api.Lists(), "listed through the API")

	api.Mute(false)
	api.Fail(500)
	api.CloseWatches()
	require.Eventually(t, func() bool { return !w.FromCache() }, 5*time.Second, 10*time.Millisecond)
	_, err = w.ListPods(context.Background())
	require.ErrorContains(t, err, "list pods in namespace pulp", "a failing API is each pass's error, never a stale cache")
	api.Fail(0)
	require.Eventually(t, w.FromCache, 30*time.Second, 20*time.Millisecond, "the watch comes back")
}

// TestWatcherRemembersAPodDeletedAfterItsEnd: the kubelet reports a deleted
// pod's containers terminated and deletes the pod at once; the pass that
// report wakes still finds the pod, with that status, so the ended
// incarnation's rows are dead in that pass. A pod force-deleted with no such
// report is not remembered, and a successor under the name replaces the
// memory.
func TestWatcherRemembersAPodDeletedAfterItsEnd(t *testing.T) {
	t.Parallel()
	api, w := watchSetup(t, WatchConfig{}, 0)
	a, b := "example-worker-6d9f-aaaaa", "example-worker-6d9f-bbbbb"
	require.NoError(t, api.GracefulDelete("pulp", a, wt0.Add(time.Minute)))
	require.NoError(t, api.KubeletFinishDelete("pulp", a, wt0.Add(time.Minute+2*time.Second)))
	require.True(t, ended(w, 2*time.Second))
	require.NoError(t, api.Delete("pulp", b))
	require.Eventually(t, func() bool {
		return len(w.informer.GetStore().List()) == 1
	}, 2*time.Second, 10*time.Millisecond, "both pods gone from the cache")

	pods, err := w.ListPods(context.Background())
	require.NoError(t, err)
	require.Len(t, pods, 2, "the API pod, and a's last status; b, force-deleted, is not remembered")
	require.Equal(t, a, pods[1].Name)
	require.NotNil(t, pods[1].Container.Terminated, "the kubelet's report of a's end")
	require.True(t, IncarnationEnded(pods[1]))

	require.NoError(t, api.Create(kubeapi.NewPod(kubeapi.PodSpec{Namespace: "pulp", Name: a, Component: "worker", Node: "node-b", Started: wt0.Add(2 * time.Minute)})))
	require.Eventually(t, func() bool {
		pods, err := w.ListPods(context.Background())
		return err == nil && len(pods) == 2 && pods[1].Name == a && pods[1].Container.Running
	}, 2*time.Second, 10*time.Millisecond, "a successor under the name replaces the memory")
}

// TestWatcherStalledWatchRelists: a watch that stays open but sends nothing,
// no event and no bookmark, is ended once silent past MaxSilence and the
// pods listed again at once; meanwhile the cache's confirmation time stays
// at the watch's last word, so a pass weighs it by its age, and once stalled
// the passes list. A change made during the stall is in the new list.
func TestWatcherStalledWatchRelists(t *testing.T) {
	t.Parallel()
	api, w := watchSetup(t, WatchConfig{MaxSilence: 800 * time.Millisecond}, 100*time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	_, confirmed, err := w.ListPodsConfirmed(context.Background())
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), confirmed, time.Second, "bookmarks confirm the cache")

	watches := api.Watches()
	api.Mute(true)                     // no events, no bookmarks, the connection open
	time.Sleep(100 * time.Millisecond) // a bookmark already on its way lands
	stalledAt := time.Now()
	require.NoError(t, api.ContainerTerminated("pulp", "example-worker-6d9f-aaaaa", "worker", 137, "OOMKilled", wt0.Add(time.Minute)))
	time.Sleep(300 * time.Millisecond)
	pods, confirmed, err := w.ListPodsConfirmed(context.Background())
	require.NoError(t, err)
	require.True(t, confirmed.Before(stalledAt), "the cache is confirmed no later than the watch's last word")
	require.True(t, pods[1].Container.Running, "the stalled cache misses the end")

	require.Eventually(t, func() bool { return w.Stalls() > 0 }, 3*time.Second, 10*time.Millisecond, "the silent watch is ended")
	require.Less(t, time.Since(stalledAt), 2*time.Second)
	// client-go lists through a watch that sends the initial state
	// (sendInitialEvents), or with a plain list.
	require.Eventually(t, func() bool { return api.Watches() > watches }, 3*time.Second, 10*time.Millisecond, "and the pods listed again at once")
	require.Eventually(t, func() bool {
		pods, _, err := w.ListPodsConfirmed(context.Background())
		return err == nil && len(pods) == 3 && pods[1].Container.Terminated != nil
	}, 3*time.Second, 10*time.Millisecond, "the new list has the end the stalled watch missed")
	api.Mute(false)
}

// TestWatcherListPodsDirect: while a stalled watch's cache misses a pod's
// deletion, ListPodsDirect lists through the API, and leaves the cache as
// it is: the list a pass makes to confirm a hold.
func TestWatcherListPodsDirect(t *testing.T) {
	t.Parallel()
	api, w := watchSetup(t, WatchConfig{MaxSilence: time.Minute}, 100*time.Millisecond)
	api.Mute(true)
	time.Sleep(150 * time.Millisecond)
	require.NoError(t, api.Delete("pulp", "example-worker-6d9f-aaaaa"))
	lists := api.Lists()
	pods, err := w.ListPodsDirect(context.Background())
	require.NoError(t, err)
	require.Len(t, pods, 2, "the API's pods: the deleted one is gone")
	require.Equal(t, lists+1, api.Lists())
	require.True(t, w.FromCache(), "the stall is not yet noticed")
	cached, err := w.ListPods(context.Background())
	require.NoError(t, err)
	require.Len(t, cached, 3, "the cache still shows the deleted pod")
	api.Mute(false)
}
