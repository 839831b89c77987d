package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat/kube"
	"github.com/lock-reaper/lock-reaper/internal/ctxwait"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/sim/simkube"
	"github.com/lock-reaper/lock-reaper/internal/testing/kubeapi"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// watchedPods is a watch case's Kubernetes: a stand-in API server that the
// fleet's pods are mirrored into as the kubelet reports them, and the
// reaper's watch of it.
type watchedPods struct {
	api    *kubeapi.Server
	mirror *simkube.Mirror
	// source is the passes' pod source: the watcher, or for a forbidden
	// watch the Source auto's decision lists with (watcher nil).
	source     reaper.PodSource
	watcher    *kube.Watcher
	maxSilence time.Duration
	ctx        context.Context
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	cleanup    []func()
}

func (w *watchedPods) Cleanup(f func()) { w.cleanup = append(w.cleanup, f) }

// watchPods starts the server, the mirror and the watch, and waits for the
// watch's first list. The bookmark interval and the watch's silence limit
// are scaled with the case. A forbidden watch is decided as `run` decides
// it: kubernetes.enabled auto with a kubeconfig, then the pods listed.
func (o options) watchPods(ctx context.Context, fleet *sim.Fleet, fault string) (*watchedPods, error) {
	w := &watchedPods{maxSilence: o.scaled(kube.DefaultMaxSilence)}
	w.api = kubeapi.New(w)
	w.api.SetBookmarkInterval(o.scaled(kubeapi.DefaultBookmarkInterval))
	w.mirror = simkube.NewMirror(w.api, fleet.Pods)
	if err := w.mirror.Sync(); err != nil {
		w.stop()
		return nil, err
	}
	ctx, w.cancel = context.WithCancel(ctx)
	w.ctx = ctx
	w.wg.Go(func() { _ = w.mirror.Run(ctx, watchMirrorPeriod) })
	if fault == watchForbidden {
		w.api.FailWatches(http.StatusForbidden)
		src, err := w.openForbidden(ctx)
		if err != nil {
			w.stop()
			return nil, err
		}
		w.source = src
		return w, nil
	}
	src, err := kube.NewRESTSource(w.api.Config(), simkube.Namespace, kube.DefaultSelector, kube.DefaultContainer)
	if err != nil {
		w.stop()
		return nil, err
	}
	if w.watcher, err = kube.NewWatcher(src, kube.WatchConfig{MaxSilence: w.maxSilence, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		w.stop()
		return nil, err
	}
	w.source = w.watcher
	w.wg.Go(func() { w.watcher.Run(ctx) })
	if !waitFor(ctx, time.Now().Add(30*time.Second), w.watcher.FromCache) {
		w.stop()
		return nil, errors.New("the pods watch did not sync within 30 s")
	}
	return w, nil
}

// openForbidden opens the pods as kubernetes.enabled auto does, through a
// kubeconfig naming the server, and checks that it found the watch refused.
func (w *watchedPods) openForbidden(ctx context.Context) (*kube.Source, error) {
	dir, err := os.MkdirTemp("", "unjam-kubeconfig-")
	if err != nil {
		return nil, err
	}
	w.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "kubeconfig")
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: bench, cluster: {server: %q}}]
users: [{name: bench, user: {token: bench}}]
contexts: [{name: bench, context: {cluster: bench, user: bench, namespace: %s}}]
current-context: bench
`, w.api.URL(), simkube.Namespace)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		return nil, err
	}
	d, err := kube.Open(ctx, kube.Config{Enabled: kube.EnabledAuto, Kubeconfig: path, Timeout: 10 * time.Second})
	switch {
	case err != nil:
		return nil, err
	case d.Source == nil || !d.WatchForbidden:
		return nil, fmt.Errorf("auto did not find the watch forbidden and the list allowed: %s", d.Reason)
	}
	return d.Source, nil
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
