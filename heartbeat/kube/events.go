package kube

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// ReportingController names lock-reaper as the writer of its Events (the
// Event's reportingComponent and source.component).
const ReportingController = "lock-reaper"

// maxNote bounds an Event's message: events.k8s.io/v1 refuses a note over
// 1 kB, and kubectl shows a long one on a single line.
const maxNote = 1024

// PodRef names the pod an Event is about. UID is what `kubectl describe pod`
// matches the Events by; without it they show in `kubectl get events` only.
type PodRef struct {
	Namespace, Name, UID string
}

// Event is one Event about a pod.
type Event struct {
	Regarding PodRef
	// Type is corev1.EventTypeNormal or EventTypeWarning.
	Type string
	// Reason is the machine reason (LocksReleased, ...), Action what was
	// done (Release, ...), Note the human sentence.
	Reason, Action, Note string
}

// EventSink writes core/v1 Events through the same REST client as the pod
// lists: client-go's events machinery (k8s.io/client-go/tools/events, for
// events.k8s.io/v1) links its whole clientset, 23 MB of binary, for an
// asynchronous broadcaster and a correlator the reaper does not need, since
// it writes a handful of Events per pass, already aggregated.
type EventSink struct {
	client rest.Interface
	// instance is the reporting instance: the reaper's pod, or its host.
	instance string
	now      func() time.Time
}

// NewEventSink returns an EventSink over cfg; instance names this reaper
// (its pod's name, else its host name) in every Event it writes.
func NewEventSink(cfg *rest.Config, instance string) (*EventSink, error) {
	client, err := restClient(cfg)
	if err != nil {
		return nil, err
	}
	return &EventSink{client: client, instance: instance, now: time.Now}, nil
}

// Create writes one Event, in the namespace of the pod it regards (the API
// server requires the two to match).
func (s *EventSink) Create(ctx context.Context, e Event) error {
	ev := s.object(e)
	req := s.client.Post().Namespace(ev.Namespace).Resource("events").Body(ev)
	if deadline, ok := ctx.Deadline(); ok {
		req = req.Timeout(time.Until(deadline))
	}
	return req.Do(ctx).Error()
}

// object is e as the core/v1 Event the API server stores. Its name is the
// pod's and a time, as client-go's recorder names them, so that two
// reapers' Events never collide; each is written once (count 1), the pass
// having aggregated it already.
func (s *EventSink) object(e Event) *corev1.Event {
	now := metav1.NewTime(s.now())
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s.%x", e.Regarding.Name, now.UnixNano()),
			Namespace: e.Regarding.Namespace,
		},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1",
			Namespace: e.Regarding.Namespace, Name: e.Regarding.Name, UID: types.UID(e.Regarding.UID),
		},
		Reason:              e.Reason,
		Message:             truncate(e.Note, maxNote),
		Type:                e.Type,
		Action:              e.Action,
		Source:              corev1.EventSource{Component: ReportingController},
		ReportingController: ReportingController,
		ReportingInstance:   s.instance,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
	}
}

// truncate cuts s to at most n bytes, on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "..."
	cut := n - len(mark)
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return strings.TrimRight(s[:cut], " ") + mark
}

// utf8Start says b begins a UTF-8 sequence (is not a continuation byte).
func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
