// Package kubeapi is a stand-in Kubernetes API server for tests: the core/v1
// pods of one cluster served over HTTP as kube-apiserver serves them, so that
// client-go (lists, informers) talks to it exactly as to a real one.
//
// It serves what the reaper's client asks and what a real server answers:
//
//   - list: labelSelector, limit and continue pages of one consistent
//     snapshot, the list's resourceVersion, 410 Gone (reason Expired) for a
//     continue token or an exact resourceVersion older than the server keeps;
//   - watch (?watch=true): chunked JSON watch events ADDED, MODIFIED, DELETED
//     (a pod that stops matching the selector is DELETED to that watch),
//     BOOKMARK, sendInitialEvents (the streaming list client-go's reflector
//     uses by default) and an ERROR event with a 410 Expired Status for a
//     resourceVersion older than the server keeps;
//   - Events created through core/v1 or events.k8s.io/v1, recorded for the
//     test to read (events.go);
//   - Status objects for errors, and faults on demand (an HTTP status, an API
//     that accepts requests and never answers).
//
// NewPod (pod.go) builds a pod as pulp-operator's Deployments make them; the
// helpers in controllers.go change pods as Kubernetes' own controllers do
// (the kubelet, the node lifecycle controller, the taint manager, a force
// delete), leaving the fields those controllers leave.
package kubeapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
)

// Server is the stand-in API server. Its zero value is not usable: New.
type Server struct {
	srv *httptest.Server

	mu   sync.Mutex
	rv   int64
	pods map[string]*corev1.Pod // by namespace/name
	// history is every change after compacted, oldest first: a watch from
	// a resourceVersion at or after compacted replays it, an older one is
	// answered 410 Gone.
	history   []change
	base      map[string]*corev1.Pod // the pods as of compacted
	compacted int64
	watchers  map[*watcher]struct{}
	uid       int

	fail      atomic.Int32
	failWatch atomic.Int32
	hang      atomic.Bool
	mute      atomic.Bool
	bookmark  atomic.Int64 // nanoseconds between bookmarks
	expired   atomic.Int32
	lists     atomic.Int32
	watches   atomic.Int32
	listHook  atomic.Pointer[func()]

	// events are the Events received (events.go).
	events eventStore
}

// change is one write: the object before (nil when created) and after (nil
// when deleted), at resourceVersion rv.
type change struct {
	rv          int64
	key         string
	before, obj *corev1.Pod
}

// New starts a server; it stops when the test ends.
func New(t interface{ Cleanup(func()) }) *Server {
	s := &Server{pods: map[string]*corev1.Pod{}, base: map[string]*corev1.Pod{}, watchers: map[*watcher]struct{}{}}
	s.bookmark.Store(int64(DefaultBookmarkInterval))
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	t.Cleanup(s.Close)
	return s
}

// Close stops the server and ends every watch.
func (s *Server) Close() {
	s.CloseWatches()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// URL is the server's address.
func (s *Server) URL() string { return s.srv.URL }

// Config is a client-go configuration pointing at the server.
func (s *Server) Config() *rest.Config {
	return &rest.Config{Host: s.srv.URL, Timeout: 30 * time.Second}
}

// Fail makes every request answer code (401, 403, 410, 500, ...) with a
// Status as the API server words it; 0 answers again.
func (s *Server) Fail(code int) { s.fail.Store(int32(code)) }

// FailWatches makes every watch request answer code (403: a Role that
// grants list but not watch); lists still answer. 0 answers again.
func (s *Server) FailWatches(code int) { s.failWatch.Store(int32(code)) }

// Hang makes every new request wait, unanswered, until the client gives up.
func (s *Server) Hang(on bool) { s.hang.Store(on) }

// DefaultBookmarkInterval is about how often kube-apiserver's watch cache
// sends a bookmark on a watch that allows them.
const DefaultBookmarkInterval = time.Minute

// SetBookmarkInterval sets how often a watch that allows bookmarks gets one.
func (s *Server) SetBookmarkInterval(d time.Duration) { s.bookmark.Store(int64(d)) }

// Mute keeps open watches open and silent: the changes still happen, and a
// watch started later sees them, as with a partitioned or stuck API server
// connection.
func (s *Server) Mute(on bool) { s.mute.Store(on) }

// Expired counts the 410 Gone answers served (lists and watches).
func (s *Server) Expired() int { return int(s.expired.Load()) }

// Lists and Watches count the list and watch requests served.
func (s *Server) Lists() int   { return int(s.lists.Load()) }
func (s *Server) Watches() int { return int(s.watches.Load()) }

// OnList, when set, is called at the start of every list request, before
// the snapshot is taken: a test makes a list slow, or changes pods under it.
func (s *Server) OnList(f func()) {
	if f == nil {
		s.listHook.Store(nil)
		return
	}
	s.listHook.Store(&f)
}

// CloseWatches ends every open watch, as an API server restart or a watch's
// timeout does; clients watch again from the last resourceVersion they saw.
func (s *Server) CloseWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		w.close()
		delete(s.watchers, w)
	}
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if api, namespace, ok := eventsPath(parts); ok {
		if s.hang.Load() {
			// Read the body first: only then does the server notice the
			// client give up, and end r's context.
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		}
		s.serveEvent(w, r, api, namespace)
		return
	}
	if r.Method != http.MethodGet || len(parts) != 5 || parts[0] != "api" || parts[1] != "v1" || parts[2] != "namespaces" || parts[4] != "pods" {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
		return
	}
	if s.hang.Load() {
		<-r.Context().Done()
		return
	}
	if code := int(s.fail.Load()); code != 0 {
		writeStatus(w, code, reasonOf(code), faultMessage(code, parts[3]))
		return
	}
	q := r.URL.Query()
	sel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "unable to parse requirement: "+err.Error())
		return
	}
	if fs := q.Get("fieldSelector"); fs != "" {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "field selectors are not served by this stand-in: "+fs)
		return
	}
	if q.Get("watch") == "true" || q.Get("watch") == "1" {
		if code := int(s.failWatch.Load()); code != 0 {
			writeStatus(w, code, reasonOf(code), strings.Replace(faultMessage(code, parts[3]), "cannot list", "cannot watch", 1))
			return
		}
		s.watches.Add(1)
		s.serveWatch(w, r, parts[3], sel)
		return
	}
	s.lists.Add(1)
	if f := s.listHook.Load(); f != nil {
		(*f)()
	}
	s.serveList(w, r, parts[3], sel)
}
