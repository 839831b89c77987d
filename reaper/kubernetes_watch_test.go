package reaper_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/heartbeat/kube"
	"github.com/lock-reaper/lock-reaper/internal/testing/kubeapi"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// A watch whose last word (a bookmark) came after a worker's last heartbeat
// stalls silently: the connection open, nothing delivered, the pod's
// deletion never arrives. Its cache still shows the pod running, confirmed
// after the heartbeat; that cache, older than HoldEvidenceMaxAge, holds
// nobody by itself: the pass lists the pods once more after the database
// was read and judges the holds on that list. The deleted pod's worker,
// its heartbeat past ttl + grace, loses its locks in that pass, as it would
// without Kubernetes; a hung worker whose pod the list shows running keeps
// them. A cache heard from a moment ago holds without that list, and a list
// that fails holds nobody: the heartbeat rules apply.
func TestKubernetesPassStalledWatchHoldsNoDeletedPod(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	api := kubeapi.New(t)
	api.SetBookmarkInterval(100 * time.Millisecond)
	for _, p := range f.kpFleet() {
		require.NoError(t, api.Create(p))
	}
	for _, name := range []string{"deleted", "hung"} {
		require.NoError(t, api.Create(kpPod(name, time.Now().Add(-2*time.Hour), 0)))
	}
	src, err := kube.NewRESTSource(api.Config(), "pulp", kube.DefaultSelector, kube.DefaultContainer)
	require.NoError(t, err)
	// A silence this long is not noticed during the test: the stall's window.
	w, err := kube.NewWatcher(src, kube.WatchConfig{MaxSilence: 10 * time.Minute, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	require.Eventually(t, w.FromCache, 10*time.Second, 10*time.Millisecond, "the watch syncs")

	// Both workers stopped heartbeating just past ttl + grace.
	const dead = 61 * time.Second
	deletedTask, deletedRes := f.kpRunningTask("1@deleted", f.kpWorker("1@deleted", dead, time.Hour))
	hungTask, hungRes := f.kpRunningTask("1@hung", f.kpWorker("1@hung", dead, time.Hour))
	pass := func() *reaper.Report { return f.kpPass(w, reaper.ModeOnce) }

	// The cache heard from a moment ago holds both, with no list.
	lists := api.Lists()
	rep := pass()
	require.Equal(t, lists, api.Lists(), "a fresh cache needs no list")
	for _, o := range []string{"1@deleted", "1@hung"} {
		require.Equal(t, heartbeat.PodAliveNotHeartbeating, kpOwner(rep, o).Kubernetes.Rule, o)
	}
	f.kpKept(rep, "1@deleted", deletedTask, deletedRes)
	f.kpKept(rep, "1@hung", hungTask, hungRes)

	api.Mute(true)                     // no events, no bookmarks, the connection open
	time.Sleep(150 * time.Millisecond) // a bookmark already on its way lands
	stalled := time.Now()
	require.NoError(t, api.Delete("pulp", "deleted"))
	time.Sleep(time.Until(stalled.Add(heartbeat.HoldEvidenceMaxAge + 500*time.Millisecond)))

	// The hole: the cache, still trusted, shows the deleted pod running,
	// confirmed after its worker's last heartbeat.
	require.True(t, w.FromCache())
	pods, confirmed, err := w.ListPodsConfirmed(context.Background())
	require.NoError(t, err)
	require.Len(t, pods, 5)
	require.Equal(t, "deleted", pods[0].Name)
	require.True(t, pods[0].CouldRun() && pods[0].Container.Running, "the stalled cache misses the deletion")
	require.WithinDuration(t, stalled, confirmed, time.Second, "confirmed at the watch's last word, after the last heartbeat")

	lists = api.Lists()
	rep = pass()
	require.Equal(t, lists+1, api.Lists(), "one list confirms the holds")
	fd := f.kpReleased(rep, "1@deleted", deletedTask, deletedRes)
	require.Equal(t, judge.VerdictOwnerDead, fd.Verdict)
	require.Equal(t, heartbeat.PodSeen, fd.Evidence().Kubernetes.Rule)
	require.Equal(t, heartbeat.PodAliveNotHeartbeating, kpOwner(rep, "1@hung").Kubernetes.Rule, "the list shows the hung worker's pod running")
	f.kpKept(rep, "1@hung", hungTask, hungRes)

	// The confirming list fails: the heartbeat rules apply, as without
	// Kubernetes; the stalled cache alone holds nobody.
	api.Fail(500)
	rep = pass()
	require.Equal(t, reaper.KubernetesRead, rep.Kubernetes.Read, "the pods were read, from the cache")
	f.kpReleased(rep, "1@hung", hungTask, hungRes)
	require.Equal(t, heartbeat.PodSeen, kpOwner(rep, "1@hung").Kubernetes.Rule)
}
