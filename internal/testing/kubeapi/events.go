package kubeapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// Events: the server records the Events it is sent, through core/v1
// (POST /api/v1/namespaces/NS/events) or events.k8s.io/v1 (POST
// /apis/events.k8s.io/v1/namespaces/NS/events), as the API server stores
// them: refused unless the Event's namespace, the path's and the regarded
// object's agree, and a name is not used twice.

// Event is one Event the server received, in the terms of both APIs.
type Event struct {
	// API is "v1" or "events.k8s.io/v1".
	API       string
	Namespace string
	Name      string
	Regarding corev1.ObjectReference
	Type      string
	Reason    string
	Action    string
	// Note is core/v1's message, events.k8s.io/v1's note.
	Note                string
	ReportingController string
	ReportingInstance   string
	Count               int32
	// body is the request's object, answered back as created.
	body json.RawMessage
}

// eventStore is the Events received, in order, apart from the pods.
type eventStore struct {
	mu     sync.Mutex
	events []Event
	fail   atomic.Int32
}

func (s *Server) eventStore() *eventStore { return &s.events }

// Events lists the Events received, in the order they came.
func (s *Server) Events() []Event {
	es := s.eventStore()
	es.mu.Lock()
	defer es.mu.Unlock()
	return slices.Clone(es.events)
}

// FailEvents makes every Event write answer code (403: a Role without
// create on events), lists and watches still answering; 0 answers again.
func (s *Server) FailEvents(code int) { s.eventStore().fail.Store(int32(code)) }

// eventsPath says the path is an Events collection of one namespace, and
// which API it is.
func eventsPath(parts []string) (api, namespace string, ok bool) {
	switch {
	case len(parts) == 5 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "namespaces" && parts[4] == "events":
		return "v1", parts[3], true
	case len(parts) == 6 && parts[0] == "apis" && parts[1] == "events.k8s.io" && parts[2] == "v1" && parts[3] == "namespaces" && parts[5] == "events":
		return "events.k8s.io/v1", parts[4], true
	}
	return "", "", false
}

func (s *Server) serveEvent(w http.ResponseWriter, r *http.Request, api, namespace string) {
	if r.Method != http.MethodPost {
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "the stand-in serves only the creation of Events")
		return
	}
	es := s.eventStore()
	code := int(es.fail.Load())
	if code == 0 {
		code = int(s.fail.Load())
	}
	if code != 0 {
		msg := fmt.Sprintf("the stand-in API server answers %d on purpose", code)
		if code == http.StatusForbidden {
			group := ""
			if api != "v1" {
				group = "events.k8s.io"
			}
			msg = fmt.Sprintf(`events is forbidden: User "system:serviceaccount:%s:lock-reaper" cannot create resource "events" in API group %q in the namespace %q`,
				namespace, group, namespace)
		}
		writeStatus(w, code, reasonOf(code), msg)
		return
	}
	e, err := decodeEvent(r, api)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	if e.Namespace == "" {
		e.Namespace = namespace
	}
	switch {
	case e.Namespace != namespace:
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "the namespace of the provided object does not match the namespace sent on the request")
		return
	case e.Regarding.Namespace != "" && e.Regarding.Namespace != namespace:
		writeStatus(w, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
			fmt.Sprintf("Event %q is invalid: involvedObject.namespace: Invalid value: %q: does not match event.namespace", e.Name, e.Regarding.Namespace))
		return
	case e.Name == "":
		writeStatus(w, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "Event is invalid: metadata.name: Required value: name or generateName is required")
		return
	}
	es.mu.Lock()
	defer es.mu.Unlock()
	if slices.ContainsFunc(es.events, func(o Event) bool { return o.Namespace == e.Namespace && o.Name == e.Name }) {
		writeStatus(w, http.StatusConflict, metav1.StatusReasonAlreadyExists, fmt.Sprintf("events %q already exists", e.Name))
		return
	}
	es.events = append(es.events, e)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	// The client reads the created object back; what it sent will do.
	_, _ = w.Write(e.body)
}

// eventCodecs decode an Event in whatever encoding the client sends: JSON,
// or the protobuf client-go's clientset sends for built-in types.
var eventCodecs = func() serializer.CodecFactory {
	sc := runtime.NewScheme()
	if err := corev1.AddToScheme(sc); err != nil {
		panic(err)
	}
	if err := eventsv1.AddToScheme(sc); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(sc)
}()

// decodeEvent reads the request's Event in the terms of its API.
func decodeEvent(r *http.Request, api string) (Event, error) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return Event{}, fmt.Errorf("read the Event: %w", err)
	}
	obj, _, err := eventCodecs.UniversalDeserializer().Decode(raw, nil, nil)
	if err != nil {
		return Event{}, fmt.Errorf("decode the Event: %w", err)
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return Event{}, err
	}
	switch ev := obj.(type) {
	case *corev1.Event:
		if api != "v1" {
			break
		}
		return Event{API: api, Namespace: ev.Namespace, Name: nameOf(ev.ObjectMeta), Regarding: ev.InvolvedObject, Type: ev.Type,
			Reason: ev.Reason, Action: ev.Action, Note: ev.Message, ReportingController: orElse(ev.ReportingController, ev.Source.Component),
			ReportingInstance: orElse(ev.ReportingInstance, ev.Source.Host), Count: ev.Count, body: body}, nil
	case *eventsv1.Event:
		if api == "v1" {
			break
		}
		count := int32(1)
		if ev.Series != nil {
			count = ev.Series.Count
		}
		return Event{API: api, Namespace: ev.Namespace, Name: nameOf(ev.ObjectMeta), Regarding: ev.Regarding, Type: ev.Type,
			Reason: ev.Reason, Action: ev.Action, Note: ev.Note, ReportingController: ev.ReportingController,
			ReportingInstance: ev.ReportingInstance, Count: count, body: body}, nil
	}
	return Event{}, fmt.Errorf("a %T is not an Event of %s", obj, api)
}

// nameOf is the object's name, or one made from generateName as the API
// server makes it.
func nameOf(m metav1.ObjectMeta) string {
	if m.Name != "" || m.GenerateName == "" {
		return m.Name
	}
	generated.Add(1)
	return fmt.Sprintf("%s%05d", m.GenerateName, generated.Load())
}

var generated atomic.Int64

func orElse(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// String is the Event as `kubectl get events` would show it, for failures.
func (e Event) String() string {
	return strings.Join([]string{e.Type, e.Reason, strings.ToLower(e.Regarding.Kind) + "/" + e.Regarding.Name, e.Note}, "  ")
}
