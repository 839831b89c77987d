package heartbeat

import (
	"maps"
	"strings"
	"time"
)

// Kubernetes evidence of liveness: what one complete, successful list of
// pods says about the owners of core_appstatus rows. Pulp's owner names are
// {pid}@{hostname}; in Kubernetes the hostname is the pod's name, and
// pulpcore-worker runs as PID 1 of its container. The rules here are pure
// (pod_rules.go): the adapter that lists the pods builds a PodView, and
// WithPods applies it to a Fleet judged from the heartbeats.
// docs/verdicts.md has the rules, the Kubernetes facts they rest on, and
// their sources.

// PodRule names the rule that decided an owner's Kubernetes evidence.
type PodRule string

const (
	// PodSeen: the pod exists and changes nothing.
	PodSeen PodRule = "pod-seen"
	// PodGone: no pod of that name in a trusted list although an earlier
	// complete list showed one, heartbeat past ttl: dead now, without the
	// heartbeat grace.
	PodGone PodRule = "pod-gone"
	// PodRestarted: the kubelet restarted the row's container after the row
	// was created: the incarnation that wrote the row is dead now, whatever
	// its heartbeat age.
	PodRestarted PodRule = "container-restarted"
	// PodContainerEnded: the kubelet reports the row's container terminated
	// (its current state, or its last one while it waits to restart) after
	// the row was created: dead now, whatever its heartbeat age.
	PodContainerEnded PodRule = "container-ended"
	// PodTerminal: the kubelet put the pod in phase Failed or Succeeded, no
	// container runs, and the row's container is terminated without a
	// finish time (ContainerStatusUnknown after an eviction): the rows of
	// this pod's incarnation are dead now (terminalRule).
	PodTerminal PodRule = "pod-terminal"
	// PodAliveNotHeartbeating: the pod can still run (PodCouldRun) and its
	// worker container has run since before the row was created, yet the
	// heartbeat is past ttl + grace: held as late until hung_worker_grace has
	// passed too.
	PodAliveNotHeartbeating PodRule = "alive-not-heartbeating"
	// PodHungTooLong: alive by Kubernetes, but not heartbeating for longer
	// than ttl + grace + hung_worker_grace: the ordinary dead-owner rule applies.
	PodHungTooLong PodRule = "hung-too-long"
	// PodOutsideView: a fresh heartbeat and no pod: the owner lives outside
	// this view (another namespace or cluster, a hostNetwork or VM worker, a
	// pod created after the list). Reported only; the other owners keep
	// their pod evidence.
	PodOutsideView PodRule = "outside-view"
	// PodNotInView: no pod, heartbeat past ttl, and the absence proves
	// nothing: the view is not trusted, the name may be truncated, or no
	// earlier list showed a pod of that name.
	PodNotInView PodRule = "not-in-view"
)

// PodRules lists every rule, in the order of their names, as reports and
// metrics list them.
var PodRules = []PodRule{
	PodAliveNotHeartbeating, PodContainerEnded, PodRestarted, PodHungTooLong,
	PodNotInView, PodOutsideView, PodGone, PodSeen, PodTerminal,
}

// Pod is what one pod of the list says, reduced to what the rules need.
type Pod struct {
	Name string
	UID  string
	// Phase is status.phase.
	Phase string
	// Reason is status.reason (Evicted, NodeLost, ...), for reports.
	Reason string
	// Terminating: the pod has a deletion timestamp.
	Terminating bool
	// Ready and ContainersReady: those conditions are True.
	Ready           bool
	ContainersReady bool
	// Disruption is the reason of a DisruptionTarget condition that is True
	// (DeletionByTaintManager, EvictionByEvictionAPI, ...), "" without one.
	Disruption string
	// AnyRunning: some container of the pod (init, regular or ephemeral,
	// whichever it is) has a running state in the status.
	AnyRunning bool
	// StartTime is status.startTime: when the kubelet accepted the pod (node
	// clock); nil when not yet.
	StartTime *time.Time
	// Container is the worker container's status (kubernetes.container),
	// API the API container's (kubernetes.api_container); nil when the pod
	// has no such container or no status for it yet.
	Container *Container
	API       *Container
}

// Container is the status of one container of a pod, as the kubelet reports it.
type Container struct {
	Name    string
	Running bool
	// StartedAt is when the current running incarnation started (node clock);
	// nil when not running.
	StartedAt *time.Time
	// FinishedAt is when the latest incarnation that ended did end (node
	// clock): the current state's if terminated, else the last state's.
	FinishedAt *time.Time
	// Terminated is the current state's termination, LastTerminated the last
	// state's (lastState.terminated); nil when the kubelet reports none.
	Terminated     *Termination
	LastTerminated *Termination
	Restarts       int32
}

// Termination is a container incarnation's end as the kubelet reports it.
type Termination struct {
	Reason   string
	ExitCode int32
	// FinishedAt is the node's clock; nil when the kubelet could not tell
	// (ContainerStatusUnknown).
	FinishedAt *time.Time
}

// SeenPod is a pod an earlier complete list showed, remembered by name.
type SeenPod struct {
	UID string
	// Seen is when a list last showed it (the reaper's clock, for expiry only).
	Seen time.Time
}

// PodView is one complete, successful list of pods, by name, with the pods
// earlier complete lists of the same namespace and selector showed. It
// belongs to one pass: a later pass lists again.
type PodView struct {
	pods map[string]Pod
	seen map[string]SeenPod
	// age is how long before the database's now the pods were last known
	// to be as the view shows them (WithAge); zero for a list made just
	// before the database was read.
	age time.Duration
	// holdsChecked: a list of its own was asked to confirm the view's holds
	// (ConfirmHolds); holdsBy is that list, nil when it failed.
	holdsChecked bool
	holdsBy      *PodView
}

// HoldEvidenceMaxAge is how old a view may be, at the snapshot's now, and
// still hold a worker alive (alive-not-heartbeating) by itself. An older
// view (a watch's cache, whose watch may have stalled without a word since,
// or a list followed by a long read of Redis) shows a pod that may have
// been deleted since: its holds rest only on a list made after the database
// was read (MustConfirmHolds, ConfirmHolds), and without one the heartbeat
// rules apply.
const HoldEvidenceMaxAge = 5 * time.Second

// ConfirmHolds gives the view the list that confirms its holds, made after
// the database was read, with that list's own age (WithAge); nil when the
// list failed, so that the view holds nobody on evidence older than
// HoldEvidenceMaxAge. Only the holds read it: every other rule keeps the
// view, listed before the database, so that no pod fact is weighed against
// older heartbeats. It returns v.
func (v *PodView) ConfirmHolds(list *PodView) *PodView {
	if v != nil {
		v.holdsChecked, v.holdsBy = true, list
	}
	return v
}

// WithAge says the view was last confirmed age before the snapshot's now:
// the time since its list was sent, or since the watch it came from was
// last heard from, measured once the database was read (so never less than
// the true age). It returns v.
func (v *PodView) WithAge(age time.Duration) *PodView {
	if v != nil {
		v.age = max(age, 0)
	}
	return v
}

// Age is how long before the snapshot's now the view was last confirmed.
func (v *PodView) Age() time.Duration { return v.age }

// NewPodView indexes the pods of one complete list. seen holds the pods
// earlier complete lists showed, by name: only their absence proves anything.
func NewPodView(pods []Pod, seen map[string]SeenPod) *PodView {
	v := &PodView{pods: make(map[string]Pod, len(pods)), seen: seen}
	for _, p := range pods {
		v.pods[p.Name] = p
	}
	return v
}

// SeenBefore says an earlier complete list showed a pod of that name.
func (v *PodView) SeenBefore(name string) bool {
	_, ok := v.seen[name]
	return ok
}

// lookup finds the pod an owner name's hostname names. ambiguous says the
// hostname may be a truncated pod name (Kubernetes cuts hostnames at 63
// characters), so its absence proves nothing.
func (v *PodView) lookup(host string) (p Pod, found, ambiguous bool) {
	if p, ok := v.pods[host]; ok {
		return p, true, false
	}
	for name := range v.pods {
		if strings.HasPrefix(name, host) {
			return Pod{}, false, true
		}
	}
	return Pod{}, false, false
}

// PodPolicy is the settings of the Kubernetes rules.
type PodPolicy struct {
	// HungWorkerGrace is how long past ttl + grace a worker alive by
	// Kubernetes is kept before the ordinary dead-owner rule applies.
	HungWorkerGrace time.Duration
	// ClockSkew is the margin (kubernetes.clock_margin) between the node's
	// clock (container and pod times) and the worker's (heartbeats, row
	// creation), so that clock differences cannot fake an ended incarnation
	// or a life.
	ClockSkew time.Duration
}

// PodEvidence is what Kubernetes said about one owner, for reports.
type PodEvidence struct {
	Rule PodRule
	Pod
}

// provesDeath says the rule proves a row's death: the pod is gone, or the
// kubelet reports its container ended or restarted since the row's last
// heartbeat.
func (r PodRule) provesDeath() bool {
	return r == PodGone || r == PodRestarted || r == PodContainerEnded || r == PodTerminal
}

// podOwner parses the row's owner name, {pid}@{hostname}, when the row's
// app type runs in the pods the selector covers (pulp-operator's worker and
// API pods); ok is false for other rows and names (such as immediate-<uuid>).
func podOwner(r AppStatus) (pid, host string, ok bool) {
	pid, host, ok = strings.Cut(r.Name, "@")
	return pid, host, ok && host != "" && (r.AppType == "worker" || r.AppType == "api")
}

// containerOf is the container whose processes write rows of the app type.
func containerOf(p Pod, appType string) *Container {
	if appType == "api" {
		return p.API
	}
	return p.Container
}

// WithPods applies the Kubernetes rules of one pass's pod list to the fleet
// and returns it. A nil view (Kubernetes off or unreadable this pass) changes
// nothing, so the pass judges exactly as it would without Kubernetes.
func (f *Fleet) WithPods(v *PodView, rules PodPolicy) *Fleet {
	if f == nil || v == nil {
		return f
	}
	f.viewTrusted = viewAnchored(f.rows, f.Now, f.Grace, v)
	confirmed := f.Now.Add(-v.age)
	f.holdsUnconfirmed = false
	f.podLiveness, f.podEvidence = map[string]Liveness{}, map[string]PodEvidence{}
	f.heartbeatNames = maps.Clone(f.names)
	// The row that gives a name its liveness explains it.
	explains := map[string]AppStatus{}
	for _, r := range f.rows {
		base := r.Liveness(f.Now, f.Grace)
		rule, pod, live, unconfirmed := rowRule(r, base, rowFacts{now: f.Now, confirmed: confirmed, grace: f.Grace, trusted: f.viewTrusted}, v, rules)
		f.holdsUnconfirmed = f.holdsUnconfirmed || unconfirmed
		if rule != "" {
			f.podEvidence[r.ID] = PodEvidence{Rule: rule, Pod: pod}
		}
		if live != base {
			f.podLiveness[r.ID] = live
		}
		if best, seen := explains[r.Name]; !seen || f.explainsBetter(r, best) {
			explains[r.Name] = r
		}
	}
	for name, r := range explains {
		o := f.names[name]
		o.Liveness, o.Kubernetes = f.rowLiveness(r), nil
		if e, ok := f.podEvidence[r.ID]; ok {
			o.Kubernetes = &e
		}
		f.names[name] = o
	}
	return f
}

// RowRule is the Kubernetes rule that decided the row with pulp_id id, ""
// when none did (no pods were read, or the row names no pod).
func (f *Fleet) RowRule(id string) PodRule { return f.podEvidence[id].Rule }

// DeathProven says the pods prove the row's death: its pod is gone, or the
// kubelet reports its container ended since the row's last heartbeat.
func (f *Fleet) DeathProven(id string) bool { return f.podEvidence[id].Rule.provesDeath() }

// PodViewTrusted says the pass's pod list is anchored in the fleet, so that
// it may prove a pod gone or an incarnation ended for the owners it covers
// (see viewAnchored); false when no pods were read.
func (f *Fleet) PodViewTrusted() bool { return f.viewTrusted }

// explainsBetter orders the rows of one name: better liveness (after the
// Kubernetes rules), then newer heartbeat, as the name's heartbeat age
// does, then the smaller id, so that the choice never depends on map order.
func (f *Fleet) explainsBetter(r, than AppStatus) bool {
	switch live, thanLive := f.rowLiveness(r), f.rowLiveness(than); {
	case live != thanLive:
		return live > thanLive
	case !r.LastHeartbeat.Equal(than.LastHeartbeat):
		return r.LastHeartbeat.After(than.LastHeartbeat)
	default:
		return r.ID < than.ID
	}
}
