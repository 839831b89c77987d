package kubeapi

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The pods and their history: the writes tests make, and the states lists
// and watches read back.

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
