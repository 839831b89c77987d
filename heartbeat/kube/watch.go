package kube

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/lock-reaper/lock-reaper/heartbeat"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Defaults of WatchConfig.
const (
	// DefaultResync is how often the informer replays its cache to the
	// handlers; it lists nothing again (the watch's own timeouts, 5 to 10
	// minutes in client-go's reflector, renew the watch).
	DefaultResync = 10 * time.Minute
	// DefaultMaxSilence is how long a watch may stay silent before it is
	// ended and the pods listed again (passes list them meanwhile). The API
	// server's watch cache sends a bookmark about every minute on a watch
	// that asks for them, as client-go's reflector does (cacher.go,
	// defaultBookmarkFrequency), so a longer silence is most likely a stuck
	// connection. Bookmarks are not promised (a cluster with no pod churn at
	// all, a watch served from etcd), so the cost of a false alarm is one
	// list of the selector's pods. Until then the cache may still be read,
	// but the pass weighs it by its age: it holds no worker alive whose last
	// heartbeat is newer than the watch's last word (heartbeat.PodView.WithAge),
	// and none at all once that word is more than a few seconds old: a
	// silent watch may have stalled right after it, so such a hold rests on
	// a list made for it (heartbeat.MustConfirmHolds, ListPodsDirect).
	DefaultMaxSilence = 70 * time.Second
	// watchSettle is how long a new watch must stay up before the cache is
	// trusted again: a watch from a resourceVersion the server no longer
	// keeps opens, then ends at once with 410 Gone.
	watchSettle = 500 * time.Millisecond
)

// WatchConfig configures a Watcher. Zero fields take the defaults.
type WatchConfig struct {
	Resync     time.Duration
	MaxSilence time.Duration
	Logger     *slog.Logger
}

// Watcher keeps the pods of a Source with a watch (client-go's shared
// informer: a list, then a watch from its resourceVersion, a new list when
// the server answers 410 Gone), so that the daemon's passes read the pods
// from memory, and tells as soon as the kubelet reports that an incarnation
// of a worker container ended (Ended), so that the daemon runs a pass then.
//
// It is a reaper.PodSource. While its watch is not known to be up to date
// (not yet synced, failing, silent for too long), ListPods lists through
// the Source instead, exactly as without a watch.
type Watcher struct {
	src      *Source
	cfg      WatchConfig
	informer cache.SharedIndexInformer
	ended    chan struct{}
	endings  atomic.Int64
	stalls   atomic.Int64
	// refusalSaid: a refused watch was logged at warning level once.
	refusalSaid atomic.Bool

	mu          sync.Mutex
	healthy     bool
	watchOpened time.Time
	lastHeard   time.Time
	// endedPods are deleted pods whose last status reported their
	// containers ended (watch_ended.go), by name.
	endedPods map[string]endedPod
}

// NewWatcher watches the pods src lists; src must list through a REST client
// (Open's sources and NewRESTSource's do). Nothing runs before Run.
func NewWatcher(src *Source, cfg WatchConfig) (*Watcher, error) {
	rp, ok := src.pods.(restPods)
	if !ok {
		return nil, errors.New("kubernetes: the pod source has no API client to watch with")
	}
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.MaxSilence <= 0 {
		cfg.MaxSilence = DefaultMaxSilence
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{src: src, cfg: cfg, ended: make(chan struct{}, 1)}
	w.informer = cache.NewSharedIndexInformerWithOptions(w.listWatch(rp.client), &corev1.Pod{},
		cache.SharedIndexInformerOptions{ResyncPeriod: cfg.Resync})
	if err := w.informer.SetWatchErrorHandlerWithContext(w.watchFailed); err != nil {
		return nil, err
	}
	if _, err := w.informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if p, ok := obj.(*corev1.Pod); ok && !initial {
				w.observe(nil, p)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, _ := oldObj.(*corev1.Pod)
			n, _ := newObj.(*corev1.Pod)
			w.observe(o, n)
		},
		DeleteFunc: func(obj any) { w.forget(obj, time.Now()) },
	}); err != nil {
		return nil, err
	}
	return w, nil
}

// listWatch lists and watches the Source's namespace and selector with
// client, noting when the watch is up and when it was last heard from.
func (w *Watcher) listWatch(client rest.Interface) cache.ListerWatcher {
	req := func(opts *metav1.ListOptions) *rest.Request {
		opts.LabelSelector = w.src.selector
		return client.Get().Namespace(w.src.namespace).Resource("pods").VersionedParams(opts, parameterCodec)
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			out := &corev1.PodList{}
			if err := req(&opts).Do(ctx).Into(out); err != nil {
				return nil, err
			}
			w.heard(true)
			return out, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			wi, err := req(&opts).Watch(ctx)
			if err != nil {
				return nil, err
			}
			w.heard(true)
			return newHeardWatch(wi, w), nil
		},
	}
}

// Run keeps the watch until ctx is cancelled, and returns once the
// informer's goroutines are gone. client-go's own logs (the reflector's)
// go to the configured logger through the context, not klog's global one,
// so watchers of different loggers never race over it.
func (w *Watcher) Run(ctx context.Context) {
	w.cfg.Logger.Info("watching kubernetes pods", slog.String("where", w.src.Where()))
	w.informer.RunWithContext(klog.NewContext(ctx, logr.FromSlogHandler(w.cfg.Logger.Handler())))
}

// Ended receives when a worker container's incarnation ended; bursts
// collapse into one value.
func (w *Watcher) Ended() <-chan struct{} { return w.ended }

// Endings counts the ends reported so far.
func (w *Watcher) Endings() int64 { return w.endings.Load() }

// Synced says the informer has its first complete list.
func (w *Watcher) Synced() bool { return w.informer.HasSynced() }

// Where names the namespace and selector, for reports and logs.
func (w *Watcher) Where() string { return w.src.Where() }

// ListPods returns the pods from the watch's cache while it is up to date,
// else lists them through the Source; never a partial list.
func (w *Watcher) ListPods(ctx context.Context) ([]heartbeat.Pod, error) {
	if !w.fresh(time.Now()) {
		return w.src.ListPods(ctx)
	}
	objs := w.informer.GetStore().List()
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	out := make([]heartbeat.Pod, 0, len(pods))
	for _, p := range pods {
		out = append(out, w.src.evidence(p))
	}
	out = w.withEndedPods(out, time.Now())
	slices.SortFunc(out, func(a, b heartbeat.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ListPodsConfirmed is ListPods, with when the pods were last known current:
// the watch's last event, bookmark or list for the cache, the moment the
// request was sent for a list.
func (w *Watcher) ListPodsConfirmed(ctx context.Context) ([]heartbeat.Pod, time.Time, error) {
	now := time.Now()
	if !w.fresh(now) {
		pods, err := w.src.ListPods(ctx)
		return pods, now, err
	}
	// Read before the cache: the cache is at least as new as this.
	w.mu.Lock()
	confirmed := w.lastHeard
	w.mu.Unlock()
	pods, err := w.ListPods(ctx)
	return pods, confirmed, err
}

// ListPodsDirect lists the pods through the Source, whatever the cache: the
// list a pass makes, after the database was read, to confirm a hold the
// cache alone may not grant (the watch may have stalled since its last
// word). The cache is left as it is.
func (w *Watcher) ListPodsDirect(ctx context.Context) ([]heartbeat.Pod, error) {
	return w.src.ListPods(ctx)
}

// FromCache says whether ListPods would read the cache now.
func (w *Watcher) FromCache() bool { return w.fresh(time.Now()) }

func (w *Watcher) fresh(now time.Time) bool {
	if !w.informer.HasSynced() {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.healthy && now.Sub(w.watchOpened) >= watchSettle && now.Sub(w.lastHeard) < w.cfg.MaxSilence
}

// heard notes a sign of life of the API: a list, a watch opened (opened),
// an event.
func (w *Watcher) heard(opened bool) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lastHeard = now
	if opened {
		if !w.healthy {
			w.watchOpened = now
		}
		w.healthy = true
	}
}

// stalled notes a watch silent for MaxSilence: the cache is not read again
// before the list that follows.
func (w *Watcher) stalled() {
	w.stalls.Add(1)
	w.mu.Lock()
	w.healthy = false
	w.mu.Unlock()
	w.cfg.Logger.Warn("kubernetes pods watch silent past the bookmark interval: listing again",
		slog.String("where", w.src.Where()), slog.Duration("silent", w.cfg.MaxSilence))
}

// Stalls counts the watches ended for their silence.
func (w *Watcher) Stalls() int64 { return w.stalls.Load() }

// watchFailed is the reflector's error handler: a failed list, or a watch
// that ended in error (410 Gone among them, after which it lists again).
func (w *Watcher) watchFailed(_ context.Context, _ *cache.Reflector, err error) {
	w.mu.Lock()
	w.healthy = false
	w.mu.Unlock()
	if errors.Is(err, context.Canceled) {
		return
	}
	// A refusal is said once: it stays until someone grants the watch, and
	// client-go retries it every second or so meanwhile.
	level := slog.LevelWarn
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		if w.refusalSaid.Swap(true) {
			level = slog.LevelDebug
		}
	} else {
		w.refusalSaid.Store(false)
	}
	w.cfg.Logger.Log(context.Background(), level, "kubernetes pods watch failed; passes list the pods until it is back",
		slog.String("where", w.src.Where()), slog.String("error", err.Error()))
}

// observe notes a change of a pod and signals a worker container's end.
//
// What counts as an end is IncarnationEndedSince (ended.go): the pod
// rules then make the ended incarnation's rows dead at once. The deletion of a pod
// object is no end: the kubelet deletes a gracefully deleted pod with grace
// period 0 once its containers stopped (pkg/kubelet/status/status_manager.go,
// syncPod: canBeDeleted, then Delete with GracePeriodSeconds 0 and the pod's
// UID as precondition), after the status update that reported them
// terminated, which is the trigger. A delete without that report (a force
// delete, a pod of a partitioned node) says nothing of the containers.
func (w *Watcher) observe(old, new *corev1.Pod) {
	if new == nil {
		return
	}
	var before *heartbeat.Pod
	if old != nil {
		b := w.src.evidence(old)
		before = &b
	}
	if !IncarnationEndedSince(before, w.src.evidence(new)) {
		return
	}
	w.endings.Add(1)
	w.cfg.Logger.Info("worker container ended: pass now", slog.String("pod", new.Name))
	select {
	case w.ended <- struct{}{}:
	default:
	}
}

// heardWatch passes a watch's events on, noting each as a sign of life.
type heardWatch struct {
	watch.Interface
	w    *Watcher
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
}

func newHeardWatch(in watch.Interface, w *Watcher) *heardWatch {
	h := &heardWatch{Interface: in, w: w, out: make(chan watch.Event), stop: make(chan struct{})}
	go h.forward()
	return h
}

func (h *heardWatch) ResultChan() <-chan watch.Event { return h.out }

func (h *heardWatch) Stop() {
	h.once.Do(func() { close(h.stop) })
	h.Interface.Stop()
}

// forward passes the events on until the watch ends, or until it has been
// silent for MaxSilence: then it ends it with 410 Gone, after which
// client-go's reflector lists the pods again at once (reflector.go,
// isExpiredError), and the cache is not read until that list is in.
func (h *heardWatch) forward() {
	defer close(h.out)
	in := h.Interface.ResultChan()
	silence := time.NewTimer(h.w.cfg.MaxSilence)
	defer silence.Stop()
	for {
		select {
		case <-silence.C:
			h.w.stalled()
			select {
			case h.out <- watch.Event{Type: watch.Error, Object: &metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired,
				Message: "lock-reaper: the watch was silent for " + h.w.cfg.MaxSilence.String() + "; listing again"}}:
			case <-h.stop:
			}
			return
		case e, ok := <-in:
			if !ok {
				return
			}
			silence.Reset(h.w.cfg.MaxSilence)
			if e.Type == watch.Error {
				h.w.mu.Lock()
				h.w.healthy = false
				h.w.mu.Unlock()
			} else {
				h.w.heard(false)
			}
			select {
			case h.out <- e:
			case <-h.stop:
				return
			}
		case <-h.stop:
			return
		}
	}
}
