package kubeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// watcher is one open watch: the changes after its start, for its namespace
// and selector.
type watcher struct {
	namespace string
	sel       labels.Selector
	ch        chan change
	done      chan struct{}
	once      sync.Once
}

// watchBuffer is how many changes a watch may fall behind by; the API
// server ends a watch that falls further behind, and so does this one.
const watchBuffer = 4096

func (w *watcher) send(c change) {
	select {
	case w.ch <- c:
	default:
		w.close()
	}
}

func (w *watcher) close() { w.once.Do(func() { close(w.done) }) }

func (w *watcher) matches(p *corev1.Pod) bool {
	return p != nil && p.Namespace == w.namespace && w.sel.Matches(labels.Set(p.Labels))
}

// event is the change as this watch sees it: a pod that comes into the
// selector is ADDED, one that leaves it DELETED. ok is false when the watch
// sees nothing of it.
func (w *watcher) event(c change) (watchEvent, bool) {
	was, is := w.matches(c.before), w.matches(c.obj)
	switch {
	case !was && is:
		return watchEvent{Type: watch.Added, Object: typed(c.obj)}, true
	case was && is:
		return watchEvent{Type: watch.Modified, Object: typed(c.obj)}, true
	case was && c.obj != nil:
		return watchEvent{Type: watch.Deleted, Object: typed(c.obj)}, true
	case was:
		last := typed(c.before)
		last.ResourceVersion = strconv.FormatInt(c.rv, 10)
		return watchEvent{Type: watch.Deleted, Object: last}, true
	}
	return watchEvent{}, false
}

// watchEvent is metav1.WatchEvent as it goes on the wire.
type watchEvent struct {
	Type   watch.EventType `json:"type"`
	Object any             `json:"object"`
}

func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request, namespace string, sel labels.Selector) {
	q := r.URL.Query()
	rv := q.Get("resourceVersion")
	initial := q.Get("sendInitialEvents") == "true"
	bookmarks := q.Get("allowWatchBookmarks") == "true"
	timeout := 30 * time.Minute
	if n, err := strconv.Atoi(q.Get("timeoutSeconds")); err == nil && n > 0 {
		timeout = time.Duration(n) * time.Second
	}
	wt := &watcher{namespace: namespace, sel: sel, ch: make(chan change, watchBuffer), done: make(chan struct{})}
	var first []watchEvent

	s.mu.Lock()
	from := int64(0)
	if rv != "" && rv != "0" {
		n, err := strconv.ParseInt(rv, 10, 64)
		if err != nil {
			s.mu.Unlock()
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "invalid resourceVersion "+rv)
			return
		}
		from = n
	}
	switch {
	case initial || rv == "" || rv == "0":
		// The current state as ADDED events, then the changes after it:
		// what a watch without a resourceVersion, and a streaming list,
		// begin with.
		for _, p := range sortedPods(s.pods) {
			if wt.matches(p) {
				first = append(first, watchEvent{Type: watch.Added, Object: typed(p)})
			}
		}
		if initial {
			first = append(first, bookmark(s.rv, true))
		}
	case from < s.compacted:
		s.mu.Unlock()
		s.expired.Add(1)
		startStream(w)
		writeEvent(w, watchEvent{Type: watch.Error, Object: statusOf(http.StatusGone, metav1.StatusReasonExpired,
			fmt.Sprintf("too old resource version: %d (%d)", from, s.compacted))})
		return
	default:
		for _, c := range s.history {
			if c.rv <= from {
				continue
			}
			if e, ok := wt.event(c); ok {
				first = append(first, e)
			}
		}
	}
	s.watchers[wt] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.watchers, wt)
		s.mu.Unlock()
	}()

	startStream(w)
	for _, e := range first {
		if !writeEvent(w, e) {
			return
		}
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var tick <-chan time.Time
	if bookmarks {
		t := time.NewTicker(time.Duration(s.bookmark.Load()))
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-tick:
			if s.mute.Load() {
				continue
			}
			// A bookmark may not run ahead of a change still queued.
			s.mu.Lock()
			at, queued := s.rv, len(wt.ch) > 0
			s.mu.Unlock()
			if !queued && !writeEvent(w, bookmark(at, false)) {
				return
			}
		case c := <-wt.ch:
			if e, ok := wt.event(c); ok && !writeEvent(w, e) {
				return
			}
		case <-wt.done:
			return
		case <-r.Context().Done():
			return
		case <-deadline.C:
			if bookmarks {
				s.mu.Lock()
				at := s.rv
				s.mu.Unlock()
				writeEvent(w, bookmark(at, false))
			}
			return
		}
	}
}

// bookmark is a BOOKMARK event at resourceVersion rv; end marks the end of
// the initial events.
func bookmark(rv int64, end bool) watchEvent {
	p := &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}}
	p.ResourceVersion = strconv.FormatInt(rv, 10)
	if end {
		p.Annotations = map[string]string{initialEventsEnd: "true"}
	}
	return watchEvent{Type: watch.Bookmark, Object: p}
}

func startStream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// writeEvent writes one event as its own chunk; false when the client went.
func writeEvent(w http.ResponseWriter, e watchEvent) bool {
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return false
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	return true
}

func sortedPods(m map[string]*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	sortByName(out)
	return out
}

// typed is the pod as a watch event carries it: with its kind, which a
// list's items leave out.
func typed(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	return p
}

func sortByName(pods []*corev1.Pod) {
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
}

// initialEventsEnd is the annotation of the bookmark that ends a watch's
// initial events (metav1.InitialEventsAnnotationKey).
const initialEventsEnd = metav1.InitialEventsAnnotationKey
