package daemon

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat/kube"
	"github.com/lock-reaper/lock-reaper/internal/testing/kubeapi"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// countingRunner records when each pass starts and how many run at once.
type countingRunner struct {
	mu      sync.Mutex
	starts  []time.Time
	running atomic.Int32
	most    atomic.Int32
	hold    time.Duration
	each    func(ctx context.Context)
}

func (c *countingRunner) RunOnce(ctx context.Context, _ reaper.Options) (*reaper.Report, error) {
	n := c.running.Add(1)
	defer c.running.Add(-1)
	for {
		m := c.most.Load()
		if n <= m || c.most.CompareAndSwap(m, n) {
			break
		}
	}
	c.mu.Lock()
	c.starts = append(c.starts, time.Now())
	each := c.each
	c.mu.Unlock()
	if each != nil {
		each(ctx)
	}
	time.Sleep(c.hold)
	return &reaper.Report{Mode: reaper.ModeOnce}, nil
}

// wake sends a wake as kube.Watcher does: a burst collapses into one.
func (c *countingRunner) setEach(f func(context.Context)) {
	c.mu.Lock()
	c.each = f
	c.mu.Unlock()
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// TestWakeRunsOnePassPerBurst: a wake runs a pass at once (after the
// debounce, without jitter), a burst of wakes runs one, and a wake during a
// pass runs one more after it, never two at once.
func TestWakeRunsOnePassPerBurst(t *testing.T) {
	t.Parallel()
	wakes := make(chan struct{}, 1)
	r := &countingRunner{hold: 300 * time.Millisecond}
	_, b := start(t, context.Background(), r, Config{Schedule: "@every 1h", Wake: wakes, WakeDebounce: 200 * time.Millisecond})
	first := b.waitPass(t)
	require.False(t, first.Woken)

	sent := time.Now()
	for range 20 {
		wake(wakes)
		time.Sleep(5 * time.Millisecond)
	}
	res := b.waitPass(t)
	require.True(t, res.Woken)
	require.Less(t, time.Since(sent), 3*time.Second, "no jitter before a woken pass")
	select {
	case extra := <-b.passes:
		t.Fatalf("a burst ran a second pass: %+v", extra)
	case <-time.After(time.Second):
	}

	// A wake while a pass runs: one more pass after it.
	r.setEach(func(context.Context) { wake(wakes) })
	wake(wakes)
	require.True(t, b.waitPass(t).Woken)
	r.setEach(nil)
	require.True(t, b.waitPass(t).Woken, "the wake during the pass runs one after it")
	require.EqualValues(t, 1, r.most.Load(), "passes never overlap")
}

// TestContainerEndStartsAPass: against the stand-in API server, the
// kubelet's report that a worker container ended starts a pass within a
// second or two, the pass reads the pods from the watch's cache, and a burst
// of reports runs one pass.
func TestContainerEndStartsAPass(t *testing.T) {
	t.Parallel()
	api := kubeapi.New(t)
	name := "example-worker-6d9f-aaaaa"
	others := []string{"example-worker-6d9f-bbbbb", "example-worker-6d9f-ccccc", "example-worker-6d9f-ddddd"}
	for _, n := range append([]string{name}, others...) {
		require.NoError(t, api.Create(kubeapi.NewPod(kubeapi.PodSpec{Namespace: "pulp", Name: n, Component: "worker", Node: "node-a", Started: time.Now().Add(-time.Hour)})))
	}
	src, err := kube.NewRESTSource(api.Config(), "pulp", kube.DefaultSelector, kube.DefaultContainer)
	require.NoError(t, err)
	w, err := kube.NewWatcher(src, kube.WatchConfig{Logger: testLogger(t)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	require.Eventually(t, w.FromCache, 10*time.Second, 10*time.Millisecond)

	var fromCache atomic.Bool
	r := &countingRunner{each: func(ctx context.Context) {
		fromCache.Store(w.FromCache())
		_, _ = w.ListPods(ctx)
	}}
	_, b := start(t, context.Background(), r, Config{Schedule: "@every 1h", Wake: w.Ended()})
	b.waitPass(t)
	lists := api.Lists()

	reported := time.Now()
	require.NoError(t, api.ContainerTerminated("pulp", name, "worker", 137, "OOMKilled", reported))
	res := b.waitPass(t)
	require.True(t, res.Woken)
	r.mu.Lock()
	latency := r.starts[len(r.starts)-1].Sub(reported)
	r.mu.Unlock()
	t.Logf("pass started %v after the kubelet's report", latency)
	require.Less(t, latency, 2500*time.Millisecond)
	require.True(t, fromCache.Load(), "the pass read the watch's cache")
	require.Equal(t, lists, api.Lists(), "no list per pass")

	// A node's workers OOM-killed together: one pass.
	for _, n := range others {
		require.NoError(t, api.ContainerTerminated("pulp", n, "worker", 137, "OOMKilled", time.Now()))
	}
	require.True(t, b.waitPass(t).Woken)
	select {
	case extra := <-b.passes:
		t.Fatalf("a burst of reports ran a second pass: %+v", extra)
	case <-time.After(1500 * time.Millisecond):
	}
	require.EqualValues(t, 4, w.Endings())
}
