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
//   - Status objects for errors, and faults on demand (an HTTP status, an API
//     that accepts requests and never answers).
//
// The helpers in controllers.go change pods as Kubernetes' own controllers
// do (the kubelet, the node lifecycle controller, the taint manager, a
// force delete), leaving the fields those controllers leave.
package kubeapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// initialEventsEnd is the annotation of the bookmark that ends a watch's
// initial events (metav1.InitialEventsAnnotationKey).
const initialEventsEnd = metav1.InitialEventsAnnotationKey

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

	fail     atomic.Int32
	hang     atomic.Bool
	mute     atomic.Bool
	bookmark atomic.Int64 // nanoseconds between bookmarks
	expired  atomic.Int32
	lists    atomic.Int32
	watches  atomic.Int32
	listHook atomic.Pointer[func()]
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

// ResourceVersion is the server's latest resourceVersion.
func (s *Server) ResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strconv.FormatInt(s.rv, 10)
}

// Compact forgets the history up to now, as etcd's compaction and the watch
// cache's window do: a watch or an exact list from an older resourceVersion,
// and a continue token issued before, are answered 410 Gone.
func (s *Server) Compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.base = clonePods(s.pods)
	s.history = nil
	s.compacted = s.rv
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

// Pod is a copy of the pod, nil when there is none.
func (s *Server) Pod(namespace, name string) *corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pods[namespace+"/"+name]; p != nil {
		return p.DeepCopy()
	}
	return nil
}

// Create stores a new pod, giving it a uid, a creation time and a
// resourceVersion when it has none, as the API server does.
func (s *Server) Create(p *corev1.Pod) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := p.Namespace + "/" + p.Name
	if s.pods[key] != nil {
		return fmt.Errorf("pods %q already exists", p.Name)
	}
	p = p.DeepCopy()
	if p.UID == "" {
		s.uid++
		p.UID = types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", s.uid))
	}
	if p.CreationTimestamp.IsZero() {
		p.CreationTimestamp = metav1.NewTime(time.Now().Truncate(time.Second))
	}
	s.write(key, p)
	return nil
}

// Update changes a pod with f, as a controller's update does, and gives it a
// new resourceVersion. f may not rename it.
func (s *Server) Update(namespace, name string, f func(*corev1.Pod)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := namespace + "/" + name
	old := s.pods[key]
	if old == nil {
		return fmt.Errorf("pods %q not found in namespace %s", name, namespace)
	}
	p := old.DeepCopy()
	f(p)
	s.write(key, p)
	return nil
}

// Delete removes a pod at once: a force delete (grace period 0), or the
// kubelet's final delete once the containers stopped.
func (s *Server) Delete(namespace, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := namespace + "/" + name
	if s.pods[key] == nil {
		return fmt.Errorf("pods %q not found in namespace %s", name, namespace)
	}
	s.write(key, nil)
	return nil
}

// write records a change and sends it to the watches. Called under mu.
func (s *Server) write(key string, p *corev1.Pod) {
	s.rv++
	before := s.pods[key]
	var obj *corev1.Pod
	if p != nil {
		p.ResourceVersion = strconv.FormatInt(s.rv, 10)
		s.pods[key] = p
		obj = p.DeepCopy()
	} else {
		delete(s.pods, key)
		// A deleted object's last state carries the delete's version.
		obj = nil
		before = before.DeepCopy()
		before.ResourceVersion = strconv.FormatInt(s.rv, 10)
	}
	c := change{rv: s.rv, key: key, before: before, obj: obj}
	s.history = append(s.history, c)
	if s.mute.Load() {
		return
	}
	for w := range s.watchers {
		w.send(c)
	}
}

func clonePods(m map[string]*corev1.Pod) map[string]*corev1.Pod {
	out := make(map[string]*corev1.Pod, len(m))
	for k, p := range m {
		out[k] = p.DeepCopy()
	}
	return out
}

// stateAt is the pods as of resourceVersion rv, which must be at least
// compacted. Called under mu.
func (s *Server) stateAt(rv int64) map[string]*corev1.Pod {
	out := clonePods(s.base)
	for _, c := range s.history {
		if c.rv > rv {
			break
		}
		if c.obj == nil {
			delete(out, c.key)
		} else {
			out[c.key] = c.obj.DeepCopy()
		}
	}
	return out
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
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

// continueToken is what a continue parameter carries: the snapshot's
// resourceVersion and the last name served.
type continueToken struct {
	RV    int64  `json:"rv"`
	After string `json:"after"`
}

func (s *Server) serveList(w http.ResponseWriter, r *http.Request, namespace string, sel labels.Selector) {
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	s.mu.Lock()
	at, after := s.rv, ""
	if c := q.Get("continue"); c != "" {
		tok, err := decodeContinue(c)
		if err != nil {
			s.mu.Unlock()
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "invalid continue token: "+err.Error())
			return
		}
		if tok.RV < s.compacted {
			s.mu.Unlock()
			s.expired.Add(1)
			writeStatus(w, http.StatusGone, metav1.StatusReasonExpired, "The provided continue parameter is too old to display a consistent list result. "+
				"You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results.")
			return
		}
		at, after = tok.RV, tok.After
	} else if v := q.Get("resourceVersion"); v != "" && v != "0" && q.Get("resourceVersionMatch") == string(metav1.ResourceVersionMatchExact) {
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil:
			s.mu.Unlock()
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "invalid resourceVersion "+v)
			return
		case n < s.compacted:
			s.mu.Unlock()
			s.expired.Add(1)
			writeStatus(w, http.StatusGone, metav1.StatusReasonExpired, fmt.Sprintf("The resourceVersion for the provided list is too old. (%d, oldest %d)", n, s.compacted))
			return
		case n <= s.rv:
			at = n
		}
	}
	state := s.stateAt(at)
	s.mu.Unlock()

	var keys []string
	for k, p := range state {
		if p.Namespace == namespace && sel.Matches(labels.Set(p.Labels)) && p.Name > after {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	list.ResourceVersion = strconv.FormatInt(at, 10)
	if limit > 0 && len(keys) > limit {
		remaining := int64(len(keys) - limit)
		keys = keys[:limit]
		list.Continue = encodeContinue(continueToken{RV: at, After: state[keys[limit-1]].Name})
		list.RemainingItemCount = &remaining
	}
	list.Items = make([]corev1.Pod, 0, len(keys))
	for _, k := range keys {
		list.Items = append(list.Items, *state[k])
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&list)
}

func encodeContinue(t continueToken) string {
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(s string) (continueToken, error) {
	var t continueToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	return t, err
}

func reasonOf(code int) metav1.StatusReason {
	switch code {
	case http.StatusUnauthorized:
		return metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusGone:
		return metav1.StatusReasonExpired
	case http.StatusTooManyRequests:
		return metav1.StatusReasonTooManyRequests
	case http.StatusGatewayTimeout:
		return metav1.StatusReasonTimeout
	default:
		return metav1.StatusReasonInternalError
	}
}

func faultMessage(code int, namespace string) string {
	switch code {
	case http.StatusForbidden:
		return fmt.Sprintf(`pods is forbidden: User "system:serviceaccount:%s:lock-reaper" cannot list resource "pods" in API group "" in the namespace %q`, namespace, namespace)
	case http.StatusUnauthorized:
		return "Unauthorized"
	default:
		return fmt.Sprintf("the stand-in API server answers %d on purpose", code)
	}
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(statusOf(code, reason, msg))
}

func statusOf(code int, reason metav1.StatusReason, msg string) *metav1.Status {
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Code: int32(code), Reason: reason, Message: msg}
}

// typed is the pod as a watch event carries it: with its kind, which a
// list's items leave out.
func typed(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	return p
}
