package main

import (
	"context"
	"errors"

	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat/kube"
	"github.com/lock-reaper/lock-reaper/internal/ctxwait"
	"github.com/lock-reaper/lock-reaper/internal/kubeapi"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/sim/simkube"
)

// watchedPods is a watch case's Kubernetes: a stand-in API server that the
// fleet's pods are mirrored into as the kubelet reports them, and the
// reaper's watch of it.
type watchedPods struct {
	api     *kubeapi.Server
	mirror  *simkube.Mirror
	watcher *kube.Watcher
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	cleanup []func()
}

func (w *watchedPods) Cleanup(f func()) { w.cleanup = append(w.cleanup, f) }

// watchPods starts the server, the mirror and the watch, and waits for the
// watch's first list.
func watchPods(ctx context.Context, fleet *sim.Fleet) (*watchedPods, error) {
	w := &watchedPods{}
	w.api = kubeapi.New(w)
	w.mirror = simkube.NewMirror(w.api, fleet.Pods)
	if err := w.mirror.Sync(); err != nil {
		w.stop()
		return nil, err
	}
	src, err := kube.NewRESTSource(w.api.Config(), simkube.Namespace, kube.DefaultSelector, kube.DefaultContainer)
	if err != nil {
		w.stop()
		return nil, err
	}
	if w.watcher, err = kube.NewWatcher(src, kube.WatchConfig{Logger: slog.New(slog.DiscardHandler)}); err != nil {
		w.stop()
		return nil, err
	}
	ctx, w.cancel = context.WithCancel(ctx)
	w.ctx = ctx
	w.wg.Go(func() { _ = w.mirror.Run(ctx, watchMirrorPeriod) })
	w.wg.Go(func() { w.watcher.Run(ctx) })
	if !waitFor(ctx, time.Now().Add(30*time.Second), w.watcher.FromCache) {
		w.stop()
		return nil, errors.New("the pods watch did not sync within 30 s")
	}
	return w, nil
}

func (w *watchedPods) stop() {
	if w.cancel != nil {
		w.cancel()
	}
	w.wg.Wait()
	for _, f := range w.cleanup {
		f()
	}
}

// reportAfter is when the kubelet's report of the pod's container end was
// written, the first after t0.
func (w *watchedPods) reportAfter(pod string, t0 time.Time) (time.Time, bool) {
	for _, t := range w.mirror.Ends(pod) {
		if !t.Before(t0) {
			return t, true
		}
	}
	return time.Time{}, false
}

// nodeLifecycle changes a crashed node's pod as Kubernetes does: Ready
// False after notReady, the taint manager's eviction after evict; both from
// t0, in the background.
func (w *watchedPods) nodeLifecycle(pod string, t0 time.Time, notReady, evict time.Duration) {
	ctx := w.ctx
	w.wg.Go(func() {
		if !ctxwait.Sleep(ctx, time.Until(t0.Add(notReady))) {
			return
		}
		_ = w.api.NodeNotReady(simkube.Namespace, pod, time.Now())
		if !ctxwait.Sleep(ctx, time.Until(t0.Add(evict))) {
			return
		}
		_ = w.api.TaintEvict(simkube.Namespace, pod, time.Now())
	})
}

// podOf is the pod of an owner name, "pid@pod".
func podOf(owner string) string {
	_, pod, _ := strings.Cut(owner, "@")
	return pod
}
